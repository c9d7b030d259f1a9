#pragma once

// The burn's compute canary's device side: fixed GEMM inputs made from a seed, and a hash of a result that
// does not depend on the order the threads visit it (an XOR of each word mixed with its index), so two
// results hash alike exactly when their bits are alike.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace memstress::kernels {

// n values in [-1, 1) on a grid of 1/1024, from `seed` and the index: exact in bf16 and in fp64.
void init_bf16(std::uint16_t* x, std::size_t n, std::uint64_t seed, cudaStream_t stream);
void init_f64(double* x, std::size_t n, std::uint64_t seed, cudaStream_t stream);
// Enqueues the hash of `bytes` (a multiple of 8) at `src` into *out (device memory, zeroed first here).
void hash_words(const void* src, std::size_t bytes, unsigned long long* out, cudaStream_t stream);

}  // namespace memstress::kernels
