#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "harness/memory/backend.hpp"

namespace memstress {

// A real GPU: cudaMalloc / cudaFree on one device ordinal, whatever device the calling thread has
// current. Events come from a small pool (creating one costs microseconds). Virtual memory goes through
// the driver API reached via the runtime (driver_api.hpp): one physical allocation per try_map call, so
// each mapped piece can be unmapped on its own.
class CudaBackend final : public DeviceBackend {
 public:
  explicit CudaBackend(int ordinal);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;
  CudaBackend(CudaBackend&&) = delete;
  CudaBackend& operator=(CudaBackend&&) = delete;

  [[nodiscard]] const DeviceInfo& info() const noexcept override { return info_; }
  [[nodiscard]] bool has_memory() const noexcept override { return true; }
  [[nodiscard]] MemInfo mem_info() const override;
  [[nodiscard]] void* try_reserve(std::size_t bytes) override;
  void release(void* address, std::size_t bytes) noexcept override;
  void synchronize() override;

  [[nodiscard]] EventHandle record_event(StreamRef stream) override;
  [[nodiscard]] bool event_complete(EventHandle event) override;
  void synchronize_event(EventHandle event) override;
  void release_event(EventHandle event) noexcept override;

  [[nodiscard]] std::uint64_t page_bytes() const noexcept override { return page_bytes_; }
  [[nodiscard]] void* reserve_address_range(std::size_t bytes) override;
  void release_address_range(void* address, std::size_t bytes) noexcept override;
  [[nodiscard]] bool try_map(void* address, std::size_t bytes) override;
  void unmap(void* address, std::size_t bytes) noexcept override;

 private:
  struct Mapping {
    CUmemGenericAllocationHandle handle = 0;
    std::size_t bytes = 0;
  };

  DeviceInfo info_;
  std::uint64_t page_bytes_ = 2ULL << 20;
  std::mutex events_mutex_;
  std::vector<EventHandle> free_events_;
  std::mutex vmm_mutex_;
  std::map<std::uintptr_t, Mapping> mappings_;  // by start address
};

}  // namespace memstress
