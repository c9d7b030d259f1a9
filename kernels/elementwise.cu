// Elementwise fp32 kernels for the in-place workload. Every arithmetic step uses an explicitly rounded
// intrinsic (__fmul_rn, __fmaf_rn, __float2bfloat16_rn) so that the compiler cannot contract or reorder
// it: the unfused chain, in place or out of place, and the fused reference must agree bit for bit.

#include <cuda_bf16.h>

#include "kernels/device_loop.cuh"
#include "kernels/launch.hpp"
#include "kernels/pattern_word.hpp"

namespace memstress::kernels::detail {
namespace {

__device__ float op_scale(float a, float x) {
  return __fmul_rn(a, x);
}
__device__ float op_axpy(float a, float x, float y) {
  return __fmaf_rn(a, x, y);
}
__device__ float op_relu(float x) {
  return x > 0.0F ? x : 0.0F;
}
__device__ float op_round_bf16(float x) {
  return __bfloat162float(__float2bfloat16_rn(x));
}

__global__ void init_uniform_kernel(float* x, std::uint64_t n, std::uint64_t seed) {
  for (std::uint64_t i = global_thread(); i < n; i += grid_threads()) {
    // 24 random bits -> [-1, 1) exactly representable.
    const auto bits = static_cast<std::uint32_t>(splitmix64(seed + i) >> 40U);
    x[i] = static_cast<float>(bits) * (1.0F / 8388608.0F) - 1.0F;
  }
}

__global__ void scale_kernel(float* out, const float* x, float a, std::uint64_t n) {
  for (std::uint64_t i = global_thread(); i < n; i += grid_threads()) {
    out[i] = op_scale(a, x[i]);
  }
}

__global__ void axpy_kernel(float* out, float a, const float* x, const float* y, std::uint64_t n) {
  for (std::uint64_t i = global_thread(); i < n; i += grid_threads()) {
    out[i] = op_axpy(a, x[i], y[i]);
  }
}

__global__ void relu_kernel(float* out, const float* x, std::uint64_t n) {
  for (std::uint64_t i = global_thread(); i < n; i += grid_threads()) {
    out[i] = op_relu(x[i]);
  }
}

__global__ void to_bf16_kernel(std::uint16_t* out, const float* x, std::uint64_t n) {
  for (std::uint64_t i = global_thread(); i < n; i += grid_threads()) {
    out[i] = __bfloat16_as_ushort(__float2bfloat16_rn(x[i]));
  }
}

__global__ void from_bf16_kernel(float* out, const std::uint16_t* x, std::uint64_t n) {
  for (std::uint64_t i = global_thread(); i < n; i += grid_threads()) {
    out[i] = __bfloat162float(__ushort_as_bfloat16(x[i]));
  }
}

__global__ void round_bf16_kernel(float* out, const float* x, std::uint64_t n) {
  for (std::uint64_t i = global_thread(); i < n; i += grid_threads()) {
    out[i] = op_round_bf16(x[i]);
  }
}

__global__ void chain_reference_kernel(float* out, const float* x, const float* y, float a, int rounds,
                                       std::uint64_t n) {
  for (std::uint64_t i = global_thread(); i < n; i += grid_threads()) {
    float v = x[i];
    const float w = y[i];
    for (int r = 0; r < rounds; ++r) {
      v = op_round_bf16(op_relu(op_axpy(a, op_scale(a, v), w)));
    }
    out[i] = v;
  }
}

}  // namespace

cudaError_t launch_init_uniform(float* x, std::uint64_t n, std::uint64_t seed, unsigned grid,
                                cudaStream_t stream) {
  init_uniform_kernel<<<grid, kBlock, 0, stream>>>(x, n, seed);
  return cudaGetLastError();
}

cudaError_t launch_scale(float* out, const float* x, float a, std::uint64_t n, unsigned grid,
                         cudaStream_t stream) {
  scale_kernel<<<grid, kBlock, 0, stream>>>(out, x, a, n);
  return cudaGetLastError();
}

cudaError_t launch_axpy(float* out, float a, const float* x, const float* y, std::uint64_t n, unsigned grid,
                        cudaStream_t stream) {
  axpy_kernel<<<grid, kBlock, 0, stream>>>(out, a, x, y, n);
  return cudaGetLastError();
}

cudaError_t launch_relu(float* out, const float* x, std::uint64_t n, unsigned grid, cudaStream_t stream) {
  relu_kernel<<<grid, kBlock, 0, stream>>>(out, x, n);
  return cudaGetLastError();
}

cudaError_t launch_to_bf16(std::uint16_t* out, const float* x, std::uint64_t n, unsigned grid,
                           cudaStream_t stream) {
  to_bf16_kernel<<<grid, kBlock, 0, stream>>>(out, x, n);
  return cudaGetLastError();
}

cudaError_t launch_from_bf16(float* out, const std::uint16_t* x, std::uint64_t n, unsigned grid,
                             cudaStream_t stream) {
  from_bf16_kernel<<<grid, kBlock, 0, stream>>>(out, x, n);
  return cudaGetLastError();
}

cudaError_t launch_round_bf16(float* out, const float* x, std::uint64_t n, unsigned grid,
                              cudaStream_t stream) {
  round_bf16_kernel<<<grid, kBlock, 0, stream>>>(out, x, n);
  return cudaGetLastError();
}

cudaError_t launch_chain_reference(float* out, const float* x, const float* y, float a, int rounds,
                                   std::uint64_t n, unsigned grid, cudaStream_t stream) {
  chain_reference_kernel<<<grid, kBlock, 0, stream>>>(out, x, y, a, rounds, n);
  return cudaGetLastError();
}

}  // namespace memstress::kernels::detail
