// The SM copy kernel: a grid-stride loop of 16-byte loads and stores, four in flight per thread, so that
// the copy is limited by memory (or by PCIe, for mapped host memory) and not by latency. The host API
// guarantees 16-byte alignment of both pointers; thread 0 copies a tail that is not a multiple of 16.

#include "kernels/launch.hpp"

namespace memstress::kernels::detail {
namespace {

constexpr unsigned kUnroll = 4;

__global__ void copy_kernel(unsigned char* dst, const unsigned char* src, std::uint64_t bytes) {
  const std::uint64_t vectors = bytes / 16;
  const std::uint64_t threads = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  const std::uint64_t tid = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
  const auto* in = reinterpret_cast<const uint4*>(src);
  auto* out = reinterpret_cast<uint4*>(dst);
  std::uint64_t i = tid;
  for (; i + (kUnroll - 1) * threads < vectors; i += kUnroll * threads) {
    uint4 v[kUnroll];
#pragma unroll
    for (unsigned k = 0; k < kUnroll; ++k) {
      v[k] = in[i + k * threads];
    }
#pragma unroll
    for (unsigned k = 0; k < kUnroll; ++k) {
      out[i + k * threads] = v[k];
    }
  }
  for (; i < vectors; i += threads) {
    out[i] = in[i];
  }
  if (tid == 0) {
    for (std::uint64_t b = vectors * 16; b < bytes; ++b) {
      dst[b] = src[b];
    }
  }
}

}  // namespace

cudaError_t launch_copy(void* dst, const void* src, std::uint64_t bytes, unsigned grid, cudaStream_t stream) {
  copy_kernel<<<grid, kBlock, 0, stream>>>(static_cast<unsigned char*>(dst),
                                           static_cast<const unsigned char*>(src), bytes);
  return cudaGetLastError();
}

}  // namespace memstress::kernels::detail
