#include "harness/replay/replay_device.hpp"

#if defined(MEMSTRESS_REPLAY_ON_GPU)
#include <cuda_runtime_api.h>

#include <unordered_map>

#include "harness/core/cuda_check.hpp"
#include "harness/memory/cuda_handles.hpp"
#endif

namespace memstress::replay {

#if defined(MEMSTRESS_REPLAY_ON_GPU)
struct ReplayDevice::Gpu {
  explicit Gpu(int ordinal) : current(ordinal) {}
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;
  Gpu(Gpu&&) = delete;
  Gpu& operator=(Gpu&&) = delete;
  ~Gpu() { MEMSTRESS_CUDA_WARN(cudaDeviceSynchronize()); }

  cuda::ScopedDevice current;
  std::unordered_map<std::uint64_t, cuda::Stream> streams;
};
#else
struct ReplayDevice::Gpu {};
#endif

ReplayDevice::ReplayDevice(DeviceBackend& backend) : backend_(backend) {
#if defined(MEMSTRESS_REPLAY_ON_GPU)
  if (backend.info().kind == BackendKind::cuda && backend.has_memory()) {
    gpu_ = std::make_unique<Gpu>(backend.info().ordinal);
  }
#endif
}

ReplayDevice::~ReplayDevice() = default;

StreamRef ReplayDevice::stream(std::uint64_t trace_stream) {
  if (!gpu_) {
    return StreamRef{static_cast<std::uintptr_t>(trace_stream)};
  }
  if (trace_stream == 0) {
    return StreamRef{};
  }
#if defined(MEMSTRESS_REPLAY_ON_GPU)
  auto it = gpu_->streams.find(trace_stream);
  if (it == gpu_->streams.end()) {
    it = gpu_->streams.emplace(trace_stream, cuda::Stream()).first;
  }
  return StreamRef::from(it->second.get());
#else
  return StreamRef{static_cast<std::uintptr_t>(trace_stream)};
#endif
}

void ReplayDevice::touch([[maybe_unused]] void* ptr, [[maybe_unused]] std::uint64_t bytes,
                         [[maybe_unused]] StreamRef stream) {
#if defined(MEMSTRESS_REPLAY_ON_GPU)
  if (!gpu_ || ptr == nullptr || bytes == 0) {
    return;
  }
  auto* first = static_cast<unsigned char*>(ptr);
  MEMSTRESS_CUDA_TRY(cudaMemsetAsync(first, 0xA5, 1, stream.cuda()));
  MEMSTRESS_CUDA_TRY(cudaMemsetAsync(first + (bytes - 1), 0x5A, 1, stream.cuda()));
#endif
}

void ReplayDevice::synchronize() {
  if (gpu_) {
    backend_.synchronize();
  }
}

}  // namespace memstress::replay
