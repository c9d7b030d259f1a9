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

#include "harness/memory/stream_ref.hpp"

namespace memstress {

enum class BackendKind { cuda, sim };

// An event as the backend hands it out (a cudaEvent_t on a GPU); 0 is never a valid event.
using EventHandle = std::uintptr_t;

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

  // Events, for frees that must wait for work on other streams (record_stream). An event marks the
  // point a stream has reached when it is recorded; it completes when the device passes that point.
  [[nodiscard]] virtual EventHandle record_event(StreamRef stream) = 0;
  [[nodiscard]] virtual bool event_complete(EventHandle event) = 0;
  virtual void synchronize_event(EventHandle event) = 0;
  virtual void release_event(EventHandle event) noexcept = 0;

  // Virtual memory, for expandable segments: reserve an address range with nothing behind it, then map
  // physical pages into it (in multiples of page_bytes()) and unmap them again. The device is charged
  // for mapped pages only.
  [[nodiscard]] virtual std::uint64_t page_bytes() const noexcept = 0;
  // Throws ApiError (or OutOfMemoryError when the address space is exhausted).
  [[nodiscard]] virtual void* reserve_address_range(std::size_t bytes) = 0;
  virtual void release_address_range(void* address, std::size_t bytes) noexcept = 0;
  // Backs [address, address + bytes) with memory; false when the device is out of memory.
  [[nodiscard]] virtual bool try_map(void* address, std::size_t bytes) = 0;
  virtual void unmap(void* address, std::size_t bytes) noexcept = 0;
};

}  // namespace memstress
