#pragma once

// Raw launchers of the collectives' fill and check kernels (collective.cu). Internal to kernels/: the host
// API (collective.hpp) picks grid sizes and turns errors into exceptions.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/collective_values.hpp"

namespace memstress::kernels::detail {

// dst[k] = input_value(rank, k, salt, modulus) for k < count, as `type`.
cudaError_t launch_collective_fill(void* dst, DType type, std::uint64_t count, int rank, std::uint64_t salt,
                                   std::uint64_t modulus, unsigned grid, cudaStream_t stream);
// Counts the elements k < count of `src` that differ from expected_value(c, k): counters[0] += bad
// elements, counters[1] = min(counters[1], first bad index).
cudaError_t launch_collective_check(const void* src, DType type, std::uint64_t count, CollectiveCase c,
                                    unsigned long long* counters, unsigned grid, cudaStream_t stream);

}  // namespace memstress::kernels::detail
