// The canary's kernels (canary.hpp): GEMM inputs and the order-free hash of a result.

#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/device_loop.cuh"
#include "kernels/launch.hpp"
#include "kernels/pattern_word.hpp"

namespace memstress::kernels::detail {
namespace {

__device__ std::uint64_t mix(std::uint64_t x) {
  return splitmix64(x);
}

__device__ double value_at(std::uint64_t seed, std::uint64_t i) {
  return static_cast<double>(mix(seed ^ (i * 0x2545f4914f6cdd1dULL)) % 2048) / 1024.0 - 1.0;
}

__global__ void init_bf16_kernel(std::uint16_t* x, std::uint64_t n, std::uint64_t seed) {
  for (std::uint64_t i = global_thread(); i < n; i += grid_threads()) {
    const __nv_bfloat16 v = __double2bfloat16(value_at(seed, i));
    x[i] = *reinterpret_cast<const std::uint16_t*>(&v);
  }
}

__global__ void init_f64_kernel(double* x, std::uint64_t n, std::uint64_t seed) {
  for (std::uint64_t i = global_thread(); i < n; i += grid_threads()) {
    x[i] = value_at(seed, i);
  }
}

__global__ void hash_kernel(const std::uint64_t* src, std::uint64_t words, unsigned long long* out) {
  std::uint64_t h = 0;
  for (std::uint64_t i = global_thread(); i < words; i += grid_threads()) {
    h ^= mix(src[i] ^ mix(i));
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    h ^= __shfl_down_sync(0xffffffffU, h, offset);
  }
  if ((threadIdx.x % 32) == 0 && h != 0) {
    atomicXor(out, static_cast<unsigned long long>(h));
  }
}

}  // namespace

cudaError_t launch_init_bf16(std::uint16_t* x, std::uint64_t n, std::uint64_t seed, unsigned grid,
                             cudaStream_t stream) {
  init_bf16_kernel<<<grid, kBlock, 0, stream>>>(x, n, seed);
  return cudaGetLastError();
}

cudaError_t launch_init_f64(double* x, std::uint64_t n, std::uint64_t seed, unsigned grid,
                            cudaStream_t stream) {
  init_f64_kernel<<<grid, kBlock, 0, stream>>>(x, n, seed);
  return cudaGetLastError();
}

cudaError_t launch_hash(const void* src, std::uint64_t words, unsigned long long* out, unsigned grid,
                        cudaStream_t stream) {
  hash_kernel<<<grid, kBlock, 0, stream>>>(static_cast<const std::uint64_t*>(src), words, out);
  return cudaGetLastError();
}

}  // namespace memstress::kernels::detail
