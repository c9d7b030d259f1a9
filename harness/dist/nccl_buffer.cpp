#include "harness/dist/nccl_buffer.hpp"

#include <nccl.h>

#include "harness/core/nccl_check.hpp"

namespace memstress {

NcclBuffer::NcclBuffer(std::size_t bytes) : bytes_(bytes) {
  MEMSTRESS_NCCL_TRY(ncclMemAlloc(&data_, bytes));
}

NcclBuffer::~NcclBuffer() {
  if (data_ != nullptr) {
    MEMSTRESS_NCCL_WARN(ncclMemFree(data_));
  }
}

NcclBuffer& NcclBuffer::operator=(NcclBuffer&& other) noexcept {
  if (this != &other) {
    NcclBuffer old(std::move(*this));
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

}  // namespace memstress
