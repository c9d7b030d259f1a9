#include "harness/replay/replay_device.hpp"

#include <cuda_runtime_api.h>

#include "harness/core/cuda_check.hpp"

namespace memstress::replay {

ReplayDevice::ReplayDevice(DeviceBackend& backend)
    : backend_(backend), real_(backend.info().kind == BackendKind::cuda && backend.has_memory()) {
  if (real_) {
    current_.emplace(backend.info().ordinal);
  }
}

ReplayDevice::~ReplayDevice() {
  if (real_) {
    MEMSTRESS_CUDA_WARN(cudaDeviceSynchronize());
  }
}

StreamRef ReplayDevice::stream(std::uint64_t trace_stream) {
  if (!real_) {
    return StreamRef{static_cast<std::uintptr_t>(trace_stream)};
  }
  if (trace_stream == 0) {
    return StreamRef{};
  }
  auto it = streams_.find(trace_stream);
  if (it == streams_.end()) {
    it = streams_.emplace(trace_stream, cuda::Stream()).first;
  }
  return StreamRef::from(it->second.get());
}

void ReplayDevice::touch(void* ptr, std::uint64_t bytes, StreamRef stream) {
  if (!real_ || ptr == nullptr || bytes == 0) {
    return;
  }
  auto* first = static_cast<unsigned char*>(ptr);
  MEMSTRESS_CUDA_TRY(cudaMemsetAsync(first, 0xA5, 1, stream.cuda()));
  MEMSTRESS_CUDA_TRY(cudaMemsetAsync(first + (bytes - 1), 0x5A, 1, stream.cuda()));
}

void ReplayDevice::synchronize() {
  if (real_) {
    backend_.synchronize();
  }
}

}  // namespace memstress::replay
