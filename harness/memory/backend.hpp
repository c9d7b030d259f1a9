#pragma once

// The device memory backend: the seam between allocators and a device. Two implementations:
//   cuda — a real GPU (cudaMalloc/cudaFree, cudaMemGetInfo);
//   sim  — a simulated device of any capacity that hands out addresses with no memory behind them,
//          deterministically, so allocator policies and fragmentation are measurable on a CPU machine.
// Allocators reserve whole segments here and carve blocks out of them; workloads never call this.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace memstress {

enum class BackendKind { cuda, sim };

struct MemInfo {
  std::uint64_t free = 0;
  std::uint64_t total = 0;
};

struct DeviceInfo {
  BackendKind kind = BackendKind::sim;
  int ordinal = 0;                          // CUDA device ordinal; 0 for sim
  std::string name;                         // "NVIDIA H200" or "simulated (80G)"
  std::string uuid;                         // "GPU-…" for cuda, empty for sim
  std::uint64_t capacity = 0;               // total device memory in bytes
  [[nodiscard]] std::string label() const;  // "cuda:0" or "sim:80G"
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  DeviceBackend() = default;
  DeviceBackend(const DeviceBackend&) = delete;
  DeviceBackend& operator=(const DeviceBackend&) = delete;
  DeviceBackend(DeviceBackend&&) = delete;
  DeviceBackend& operator=(DeviceBackend&&) = delete;

  [[nodiscard]] virtual const DeviceInfo& info() const noexcept = 0;
  // True when addresses are backed by memory that kernels and copies may touch.
  [[nodiscard]] virtual bool has_memory() const noexcept = 0;
  [[nodiscard]] virtual MemInfo mem_info() const = 0;
  // Reserves `bytes` of device memory. Returns nullptr when the device is out of memory (allocators
  // free their caches and retry); throws ApiError for any other failure.
  [[nodiscard]] virtual void* try_reserve(std::size_t bytes) = 0;
  // Returns memory from try_reserve; `bytes` is the size it was reserved with. Never throws.
  virtual void release(void* address, std::size_t bytes) noexcept = 0;
  // Waits for all device work (a no-op on the simulated device).
  virtual void synchronize() = 0;
};

}  // namespace memstress
