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
// Counts the 8-byte words in which a and b differ, into counters as launch_check does.
cudaError_t launch_compare(const void* a, const void* b, std::uint64_t bytes, unsigned long long* counters,
                           unsigned grid, cudaStream_t stream);
// Copies `bytes` from src to dst with SM loads and stores (both 16-byte aligned; either may be mapped
// host memory).
cudaError_t launch_copy(void* dst, const void* src, std::uint64_t bytes, unsigned grid, cudaStream_t stream);
// Two copies of `bytes` in one grid: even warps src_a to dst_a, odd warps src_b to dst_b.
cudaError_t launch_copy_both(void* dst_a, const void* src_a, void* dst_b, const void* src_b,
                             std::uint64_t bytes, unsigned grid, cudaStream_t stream);
// Elementwise fp32 ops over n elements (elementwise.cu). `out` may equal `x` (in place).
cudaError_t launch_init_uniform(float* x, std::uint64_t n, std::uint64_t seed, unsigned grid,
                                cudaStream_t stream);
cudaError_t launch_scale(float* out, const float* x, float a, std::uint64_t n, unsigned grid,
                         cudaStream_t stream);
cudaError_t launch_axpy(float* out, float a, const float* x, const float* y, std::uint64_t n, unsigned grid,
                        cudaStream_t stream);
cudaError_t launch_relu(float* out, const float* x, std::uint64_t n, unsigned grid, cudaStream_t stream);
// The burn's canary (canary.cu): fixed GEMM inputs and the order-free hash of a result.
cudaError_t launch_init_bf16(std::uint16_t* x, std::uint64_t n, std::uint64_t seed, unsigned grid,
                             cudaStream_t stream);
cudaError_t launch_init_f64(double* x, std::uint64_t n, std::uint64_t seed, unsigned grid,
                            cudaStream_t stream);
cudaError_t launch_hash(const void* src, std::uint64_t words, unsigned long long* out, unsigned grid,
                        cudaStream_t stream);
// bf16 is carried as its 16-bit pattern.
cudaError_t launch_to_bf16(std::uint16_t* out, const float* x, std::uint64_t n, unsigned grid,
                           cudaStream_t stream);
cudaError_t launch_from_bf16(float* out, const std::uint16_t* x, std::uint64_t n, unsigned grid,
                             cudaStream_t stream);
// x = float(bf16(x)): the cast round trip, in place.
cudaError_t launch_round_bf16(float* out, const float* x, std::uint64_t n, unsigned grid,
                              cudaStream_t stream);
// The whole chain (scale, axpy, relu, bf16 round trip) `rounds` times in one kernel: the reference.
cudaError_t launch_chain_reference(float* out, const float* x, const float* y, float a, int rounds,
                                   std::uint64_t n, unsigned grid, cudaStream_t stream);
cudaError_t launch_spin(std::uint64_t nanoseconds, cudaStream_t stream);
// Test-only (Note [Planted faults]): bit `bit` of 8-byte word `word` at `buffer` set to 0, to 1, or flipped.
enum class PlantBit : std::uint8_t { clear, set, flip };
cudaError_t launch_plant(void* buffer, std::uint64_t word, unsigned bit, PlantBit how, cudaStream_t stream);
// One pass of moving inversions over `bytes` at `buffer`: every word is compared with the pattern's word
// (complemented when `complemented`), counted into counters as launch_check does when it differs, and
// replaced by the complement of that word; the words go in ascending order, or descending when `descending`.
cudaError_t launch_invert(void* buffer, std::uint64_t bytes, Pattern pattern, std::uint64_t seed,
                          bool complemented, bool descending, unsigned long long* counters, unsigned grid,
                          cudaStream_t stream);

}  // namespace memstress::kernels::detail
