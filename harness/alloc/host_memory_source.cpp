#include "harness/alloc/host_memory_source.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "harness/alloc/cuda_host_memory_source.hpp"
#include "harness/core/error.hpp"

namespace memstress {

Completion& Completion::operator=(Completion&& other) noexcept {
  if (this != &other) {
    reset();
    source_ = std::exchange(other.source_, nullptr);
    token_ = std::exchange(other.token_, 0);
  }
  return *this;
}

bool Completion::done() const {
  return source_ == nullptr || source_->do_done(token_);
}

void Completion::wait() const {
  if (source_ != nullptr) {
    source_->do_wait(token_);
  }
}

void Completion::reset() noexcept {
  if (source_ != nullptr) {
    std::exchange(source_, nullptr)->do_release(std::exchange(token_, 0));
  }
}

void* PlainHostMemorySource::allocate(std::size_t bytes) {
  return std::aligned_alloc(kHostPageBytes, bytes);  // bytes is a multiple of the alignment, as required
}

void PlainHostMemorySource::deallocate(void* ptr, std::size_t /*bytes*/) noexcept {
  std::free(ptr);  // NOLINT(cppcoreguidelines-no-malloc)
}

std::unique_ptr<HostMemorySource> make_host_memory_source(std::string_view name) {
  if (name == "cuda") {
    return std::make_unique<CudaHostMemorySource>();
  }
  if (name == "plain") {
    return std::make_unique<PlainHostMemorySource>();
  }
  throw InputError(fmt::format("unknown host memory source '{}' (expected cuda or plain)", name));
}

}  // namespace memstress
