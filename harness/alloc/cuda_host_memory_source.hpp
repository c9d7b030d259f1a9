#pragma once

// The `cuda` host memory source: page-locked memory from cudaHostAlloc(portable | mapped), so any device
// can DMA from it and kernels may read it through its device alias. Completions are CUDA events
// (cudaEventDisableTiming: they only order, never time) from a pool owned by the source: an event is
// taken when a freed block's stream is recorded and goes back when the block's completion is destroyed,
// so the pool grows to the most completions outstanding at once and no further. Events belong to a
// device, so the pool keeps idle events per device and records each on the device of its stream.

#include <cstddef>
#include <deque>
#include <mutex>
#include <vector>

#include "harness/alloc/host_memory_source.hpp"
#include "harness/memory/cuda_handles.hpp"

namespace memstress {

class CudaHostMemorySource final : public HostMemorySource {
 public:
  // Throws EnvironmentError where there is no CUDA device.
  CudaHostMemorySource();
  ~CudaHostMemorySource() override = default;
  CudaHostMemorySource(const CudaHostMemorySource&) = delete;
  CudaHostMemorySource& operator=(const CudaHostMemorySource&) = delete;
  CudaHostMemorySource(CudaHostMemorySource&&) = delete;
  CudaHostMemorySource& operator=(CudaHostMemorySource&&) = delete;

  [[nodiscard]] std::string_view name() const noexcept override { return "cuda"; }
  [[nodiscard]] bool pinned() const noexcept override { return true; }
  [[nodiscard]] void* allocate(std::size_t bytes) override;
  void deallocate(void* ptr, std::size_t bytes) noexcept override;

  // Events the pool has created so far, in use or idle.
  [[nodiscard]] std::size_t events_created() const;

 private:
  struct PooledEvent {
    int device = 0;
    cuda::Event event;
  };

  Completion do_record(StreamRef stream) override;
  bool do_done(std::uintptr_t token) override;
  void do_wait(std::uintptr_t token) override;
  void do_release(std::uintptr_t token) noexcept override;

  PooledEvent& acquire(int device);
  static PooledEvent& from_token(std::uintptr_t token) noexcept;

  struct DevicePool {
    std::vector<PooledEvent*>
        idle;  // events in no completion; capacity >= created, so release never allocates
    std::size_t created = 0;
  };

  mutable std::mutex mutex_;
  std::deque<PooledEvent> events_;  // every event made; tokens point here (stable addresses)
  std::vector<DevicePool> pools_;   // per device
};

}  // namespace memstress
