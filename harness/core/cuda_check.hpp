#pragma once

// Throwing check for the CUDA runtime, and a non-throwing variant for destructors (the shape of
// nvbench's NVBENCH_CUDA_CALL and RMM's RMM_CUDA_TRY). The error carries the call text, file and line.

#include <cuda_runtime_api.h>

namespace memstress::detail {

[[noreturn]] void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line);
void report_cuda_error(cudaError_t error, const char* call, const char* file, int line) noexcept;

}  // namespace memstress::detail

#define MEMSTRESS_CUDA_TRY(call)                                                                \
  do {                                                                                          \
    const cudaError_t memstress_cuda_status_ = (call);                                          \
    if (memstress_cuda_status_ != cudaSuccess) {                                                \
      ::memstress::detail::throw_cuda_error(memstress_cuda_status_, #call, __FILE__, __LINE__); \
    }                                                                                           \
  } while (false)

// For destructors and cleanup paths: reports to stderr, never throws.
#define MEMSTRESS_CUDA_WARN(call)                                                                \
  do {                                                                                           \
    const cudaError_t memstress_cuda_status_ = (call);                                           \
    if (memstress_cuda_status_ != cudaSuccess) {                                                 \
      ::memstress::detail::report_cuda_error(memstress_cuda_status_, #call, __FILE__, __LINE__); \
    }                                                                                            \
  } while (false)

// After a kernel launch: launch-configuration errors surface here, not at the next unrelated call.
#define MEMSTRESS_CUDA_CHECK_LAUNCH() MEMSTRESS_CUDA_TRY(cudaGetLastError())
