#pragma once

// What replay needs of the device beyond the allocator: a stream for each of the trace's streams, and,
// on a real GPU, memory that is really touched.
//
// Design note. On the simulated device a trace stream id is used as the StreamRef as it is (only
// equality matters there). On a GPU the ids are another process's cudaStream_t values, meaningless
// here: the legacy default stream (0) stays 0 and every other id gets a real non-blocking stream,
// created on first use and destroyed with this object (after the device is synchronized). Each block
// handed out on a GPU gets its first and last bytes written (cudaMemsetAsync on its stream), so that a
// block the allocator carved out of memory that is not backed would fault at once, not silently pass.

#include <cstdint>
#include <memory>

#include "harness/memory/backend.hpp"
#include "harness/memory/stream_ref.hpp"

namespace memstress::replay {

class ReplayDevice {
 public:
  explicit ReplayDevice(DeviceBackend& backend);
  ~ReplayDevice();
  ReplayDevice(const ReplayDevice&) = delete;
  ReplayDevice& operator=(const ReplayDevice&) = delete;
  ReplayDevice(ReplayDevice&&) = delete;
  ReplayDevice& operator=(ReplayDevice&&) = delete;

  [[nodiscard]] StreamRef stream(std::uint64_t trace_stream);
  // Writes the first and last bytes of [ptr, ptr + bytes) on `stream` (a GPU only; no-op on sim).
  void touch(void* ptr, std::uint64_t bytes, StreamRef stream);
  // Waits for everything enqueued (a GPU only).
  void synchronize();

 private:
  // The GPU's current device and streams (replay_device.cpp), on a real GPU only: none in the build without
  // CUDA (Note [The build without CUDA], cmake/HostOnly.cmake), which has no real GPU.
  struct Gpu;
  DeviceBackend& backend_;
  std::unique_ptr<Gpu> gpu_;
};

}  // namespace memstress::replay
