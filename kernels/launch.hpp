#pragma once

// Raw launchers of the kernels in *.cu. Internal to kernels/: the host-side API (pattern.hpp) checks
// arguments, picks grid sizes and turns errors into exceptions, so the .cu files stay free of host
// libraries that nvcc's front end handles poorly (fmt's compile-time format strings).

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/pattern_word.hpp"

namespace memstress::kernels::detail {

inline constexpr unsigned kBlock = 256;

// Each returns cudaGetLastError() after the launch.
cudaError_t launch_fill(void* dst, std::uint64_t bytes, Pattern pattern, std::uint64_t seed, unsigned grid,
                        cudaStream_t stream);
// counters[0] += bad words, counters[1] = min(counters[1], first bad word index).
cudaError_t launch_check(const void* src, std::uint64_t bytes, Pattern pattern, std::uint64_t seed,
                         unsigned long long* counters, unsigned grid, cudaStream_t stream);
cudaError_t launch_spin(std::uint64_t nanoseconds, cudaStream_t stream);

}  // namespace memstress::kernels::detail
