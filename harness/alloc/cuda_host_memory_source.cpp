#include "harness/alloc/cuda_host_memory_source.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <utility>

#include "harness/core/cuda_check.hpp"
#include "harness/core/error.hpp"

namespace memstress {

CudaHostMemorySource::CudaHostMemorySource() {
  const int devices = cuda::device_count();
  if (devices == 0) {
    throw EnvironmentError("the cuda host memory source needs a CUDA device (none found); use the plain one");
  }
  pools_.resize(static_cast<std::size_t>(devices));
}

void* CudaHostMemorySource::allocate(std::size_t bytes) {
  void* ptr = nullptr;
  const cudaError_t status = cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable | cudaHostAllocMapped);
  if (status == cudaErrorMemoryAllocation) {
    static_cast<void>(cudaGetLastError());  // not sticky: clear it so the next call does not see it
    return nullptr;
  }
  MEMSTRESS_CUDA_TRY(status);
  return ptr;
}

void CudaHostMemorySource::deallocate(void* ptr, std::size_t /*bytes*/) noexcept {
  MEMSTRESS_CUDA_WARN(cudaFreeHost(ptr));
}

std::size_t CudaHostMemorySource::events_created() const {
  const std::scoped_lock lock(mutex_);
  return events_.size();
}

CudaHostMemorySource::PooledEvent& CudaHostMemorySource::acquire(int device) {
  const auto index = static_cast<std::size_t>(device);
  {
    const std::scoped_lock lock(mutex_);
    if (index >= pools_.size()) {
      throw InputError(
          fmt::format("cuda host memory source: a stream on device {} of {}", device, pools_.size()));
    }
    if (auto& idle = pools_[index].idle; !idle.empty()) {
      PooledEvent* event = idle.back();
      idle.pop_back();
      return *event;
    }
  }
  // Created outside the lock: event creation is a driver call.
  const cuda::ScopedDevice on(device);
  cuda::Event event(cuda::Event::Timing::disabled);
  const std::scoped_lock lock(mutex_);
  DevicePool& pool = pools_[index];
  pool.idle.reserve(pool.created + 1);
  PooledEvent& pooled = events_.emplace_back(PooledEvent{device, std::move(event)});
  ++pool.created;
  return pooled;
}

CudaHostMemorySource::PooledEvent& CudaHostMemorySource::from_token(std::uintptr_t token) noexcept {
  return *reinterpret_cast<PooledEvent*>(token);  // NOLINT(performance-no-int-to-ptr)
}

Completion CudaHostMemorySource::do_record(StreamRef stream) {
  int device = 0;
  MEMSTRESS_CUDA_TRY(cudaStreamGetDevice(stream.cuda(), &device));
  PooledEvent& event = acquire(device);
  Completion completion = make_completion(
      reinterpret_cast<std::uintptr_t>(&event));  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
  const cuda::ScopedDevice on(device);
  event.event.record(stream.cuda());  // on failure `completion` gives the event back
  return completion;
}

bool CudaHostMemorySource::do_done(std::uintptr_t token) {
  return from_token(token).event.query();
}

void CudaHostMemorySource::do_wait(std::uintptr_t token) {
  from_token(token).event.synchronize();
}

void CudaHostMemorySource::do_release(std::uintptr_t token) noexcept {
  PooledEvent& event = from_token(token);
  const std::scoped_lock lock(mutex_);
  pools_[static_cast<std::size_t>(event.device)].idle.push_back(&event);  // within capacity: cannot throw
}

}  // namespace memstress
