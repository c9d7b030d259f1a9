#pragma once

// Device helpers shared by the .cu files of kernels/ (nvcc only): the grid-stride loop's start and step,
// and the per-warp reduction of a check's error count and first bad index into two device counters.

#include <cstdint>

namespace memstress::kernels::detail {

__device__ inline std::uint64_t global_thread() {
  return blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
}

__device__ inline std::uint64_t grid_threads() {
  return static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
}

// Warp-level sum and minimum, then one pair of atomics per warp that saw an error: counters[0] += bad,
// counters[1] = min(counters[1], first). Every lane of the warp must call it.
__device__ inline void report_bad(std::uint64_t bad, std::uint64_t first, unsigned long long* counters) {
  for (int offset = 16; offset > 0; offset /= 2) {
    bad += __shfl_down_sync(0xffffffffU, bad, offset);
    const std::uint64_t other = __shfl_down_sync(0xffffffffU, first, offset);
    first = other < first ? other : first;
  }
  if ((threadIdx.x % 32) == 0 && bad != 0) {
    atomicAdd(&counters[0], static_cast<unsigned long long>(bad));
    atomicMin(&counters[1], static_cast<unsigned long long>(first));
  }
}

}  // namespace memstress::kernels::detail
