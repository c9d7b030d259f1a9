#include "harness/core/cuda_check.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "harness/core/error.hpp"

namespace memstress::detail {

void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line) {
  // Clear a non-sticky error so the next unrelated call does not report it again.
  static_cast<void>(cudaGetLastError());
  throw ApiError("CUDA", static_cast<int>(error), cudaGetErrorName(error), call, file, line,
                 cudaGetErrorString(error));
}

void report_cuda_error(cudaError_t error, const char* call, const char* file, int line) noexcept {
  static_cast<void>(cudaGetLastError());
  std::fprintf(stderr, "memstress: warning: CUDA error %s (%d): %s\n  in %s at %s:%d\n",
               cudaGetErrorName(error), static_cast<int>(error), cudaGetErrorString(error), call, file, line);
}

}  // namespace memstress::detail
