#include "harness/memory/host_buffers.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <utility>

#include "harness/core/cuda_check.hpp"
#include "harness/core/error.hpp"

namespace memstress {
namespace {

constexpr std::size_t kPage = 4096;

}  // namespace

void PageableBuffer::Free::operator()(void* p) const noexcept {
  std::free(p);  // NOLINT(cppcoreguidelines-no-malloc): pairs with std::aligned_alloc
}

PageableBuffer::PageableBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) {
    return;
  }
  const std::size_t rounded = (bytes + kPage - 1) / kPage * kPage;
  data_.reset(std::aligned_alloc(kPage, rounded));  // NOLINT(cppcoreguidelines-no-malloc)
  if (data_ == nullptr) {
    throw OutOfMemoryError(fmt::format("pageable host buffer of {} bytes: out of host memory", bytes));
  }
  std::memset(data_.get(), 0, rounded);  // fault every page in now, not inside a timed copy
}

RegisteredBuffer::RegisteredBuffer(std::size_t bytes) : pages_(bytes) {
  if (bytes != 0) {
    MEMSTRESS_CUDA_TRY(
        cudaHostRegister(pages_.data(), bytes, cudaHostRegisterPortable | cudaHostRegisterMapped));
  }
}

RegisteredBuffer::~RegisteredBuffer() {
  unregister();
}

RegisteredBuffer::RegisteredBuffer(RegisteredBuffer&& other) noexcept : pages_(std::move(other.pages_)) {
  other.pages_ = PageableBuffer();
}

RegisteredBuffer& RegisteredBuffer::operator=(RegisteredBuffer&& other) noexcept {
  if (this != &other) {
    unregister();
    pages_ = std::exchange(other.pages_, PageableBuffer());
  }
  return *this;
}

void RegisteredBuffer::unregister() noexcept {
  if (pages_.data() != nullptr) {
    MEMSTRESS_CUDA_WARN(cudaHostUnregister(pages_.data()));
  }
}

}  // namespace memstress
