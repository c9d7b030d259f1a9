#include "harness/memory/cuda_backend.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "harness/core/cuda_check.hpp"
#include "harness/core/error.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "harness/memory/uuid.hpp"

namespace memstress {

CudaBackend::CudaBackend(int ordinal) {
  const int count = cuda::device_count();
  if (ordinal < 0 || ordinal >= count) {
    throw EnvironmentError(
        fmt::format("--device cuda:{}: this machine has {} CUDA device(s)", ordinal, count));
  }
  cudaDeviceProp prop{};
  MEMSTRESS_CUDA_TRY(cudaGetDeviceProperties(&prop, ordinal));
  info_.kind = BackendKind::cuda;
  info_.ordinal = ordinal;
  info_.name = prop.name;
  info_.uuid = format_gpu_uuid(prop.uuid);
  info_.capacity = prop.totalGlobalMem;
  // Create the context now, so its memory is not charged to the first case.
  const cuda::ScopedDevice device(ordinal);
  MEMSTRESS_CUDA_TRY(cudaFree(nullptr));
}

MemInfo CudaBackend::mem_info() const {
  const cuda::ScopedDevice device(info_.ordinal);
  std::size_t free = 0;
  std::size_t total = 0;
  MEMSTRESS_CUDA_TRY(cudaMemGetInfo(&free, &total));
  return {free, total};
}

void* CudaBackend::try_reserve(std::size_t bytes) {
  const cuda::ScopedDevice device(info_.ordinal);
  void* address = nullptr;
  const cudaError_t status = cudaMalloc(&address, bytes);
  if (status == cudaErrorMemoryAllocation) {
    static_cast<void>(cudaGetLastError());
    return nullptr;
  }
  MEMSTRESS_CUDA_TRY(status);
  return address;
}

void CudaBackend::release(void* address, std::size_t /*bytes*/) noexcept {
  try {
    const cuda::ScopedDevice device(info_.ordinal);
    MEMSTRESS_CUDA_WARN(cudaFree(address));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memstress: warning: releasing device memory: %s\n", e.what());
  }
}

void CudaBackend::synchronize() {
  const cuda::ScopedDevice device(info_.ordinal);
  MEMSTRESS_CUDA_TRY(cudaDeviceSynchronize());
}

}  // namespace memstress
