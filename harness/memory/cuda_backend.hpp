#pragma once

#include "harness/memory/backend.hpp"

namespace memstress {

// A real GPU: cudaMalloc / cudaFree on one device ordinal, whatever device the calling thread has current.
class CudaBackend final : public DeviceBackend {
 public:
  explicit CudaBackend(int ordinal);

  [[nodiscard]] const DeviceInfo& info() const noexcept override { return info_; }
  [[nodiscard]] bool has_memory() const noexcept override { return true; }
  [[nodiscard]] MemInfo mem_info() const override;
  [[nodiscard]] void* try_reserve(std::size_t bytes) override;
  void release(void* address, std::size_t bytes) noexcept override;
  void synchronize() override;

 private:
  DeviceInfo info_;
};

}  // namespace memstress
