#pragma once

// Elementwise fp32 ops as eager frameworks run them, one kernel per op, in place (out == x) or out of
// place, plus a fused reference of the whole chain. Every op is explicitly rounded, so the three agree bit
// for bit (elementwise.cu). Buffers must be 16-byte aligned (InputError otherwise).

#include <cuda_runtime_api.h>

#include <cstdint>

namespace memstress::kernels {

// x[i] uniform in [-1, 1), from (seed, i).
void init_uniform(float* x, std::uint64_t n, std::uint64_t seed, cudaStream_t stream);
void scale(float* out, const float* x, float a, std::uint64_t n, cudaStream_t stream);
void axpy(float* out, float a, const float* x, const float* y, std::uint64_t n, cudaStream_t stream);
void relu(float* out, const float* x, std::uint64_t n, cudaStream_t stream);
void to_bf16(std::uint16_t* out, const float* x, std::uint64_t n, cudaStream_t stream);
void from_bf16(float* out, const std::uint16_t* x, std::uint64_t n, cudaStream_t stream);
// out = float(bf16(x)), the cast round trip without the bf16 buffer.
void round_bf16(float* out, const float* x, std::uint64_t n, cudaStream_t stream);
// out = the chain  v = round_bf16(relu(a * (a * v) + y))  applied `rounds` times to x, in one kernel.
void chain_reference(float* out, const float* x, const float* y, float a, int rounds, std::uint64_t n,
                     cudaStream_t stream);

}  // namespace memstress::kernels
