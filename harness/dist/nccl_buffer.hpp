#pragma once

// Device memory from ncclMemAlloc (RAII, move-only): what nccl-tests (NCCL 2.19 and later) gives its
// collectives, and what NCCL can register for zero-copy transfers, in a CUDA graph among others. On the
// current device.

#include <cstddef>
#include <utility>

namespace memstress {

class NcclBuffer {
 public:
  NcclBuffer() = default;
  explicit NcclBuffer(std::size_t bytes);
  ~NcclBuffer();
  NcclBuffer(NcclBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  NcclBuffer& operator=(NcclBuffer&& other) noexcept;
  NcclBuffer(const NcclBuffer&) = delete;
  NcclBuffer& operator=(const NcclBuffer&) = delete;

  [[nodiscard]] void* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace memstress
