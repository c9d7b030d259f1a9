// The SM copy kernels: a grid-stride loop of 16-byte loads and stores, four in flight per thread, so that
// the copy is limited by memory (or by PCIe, for mapped host memory) and not by latency. The host API
// guarantees 16-byte alignment of both pointers; thread 0 copies a tail that is not a multiple of 16.
// copy_both_kernel does two copies in one grid, even warps the first and odd warps the second, as
// nvbandwidth's split-warp kernel does both directions of its SM bidirectional testcases.

#include "kernels/launch.hpp"

namespace memstress::kernels::detail {
namespace {

constexpr unsigned kUnroll = 4;

// Thread `tid` of `threads` copying its share of `bytes`.
__device__ void copy_share(unsigned char* dst, const unsigned char* src, std::uint64_t bytes,
                           std::uint64_t tid, std::uint64_t threads) {
  const std::uint64_t vectors = bytes / 16;
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

__global__ void copy_kernel(unsigned char* dst, const unsigned char* src, std::uint64_t bytes) {
  copy_share(dst, src, bytes, blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x,
             static_cast<std::uint64_t>(gridDim.x) * blockDim.x);
}

// kBlock is a multiple of 64: every block holds as many even warps as odd ones.
__global__ void copy_both_kernel(unsigned char* dst_a, const unsigned char* src_a, unsigned char* dst_b,
                                 const unsigned char* src_b, std::uint64_t bytes) {
  const std::uint64_t tid = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
  const std::uint64_t warp = tid / warpSize;
  const std::uint64_t share = (warp / 2) * warpSize + tid % warpSize;  // index among the warps of its parity
  const std::uint64_t threads = static_cast<std::uint64_t>(gridDim.x) * blockDim.x / 2;
  if (warp % 2 == 0) {
    copy_share(dst_a, src_a, bytes, share, threads);
  } else {
    copy_share(dst_b, src_b, bytes, share, threads);
  }
}

}  // namespace

cudaError_t launch_copy(void* dst, const void* src, std::uint64_t bytes, unsigned grid, cudaStream_t stream) {
  copy_kernel<<<grid, kBlock, 0, stream>>>(static_cast<unsigned char*>(dst),
                                           static_cast<const unsigned char*>(src), bytes);
  return cudaGetLastError();
}

cudaError_t launch_copy_both(void* dst_a, const void* src_a, void* dst_b, const void* src_b,
                             std::uint64_t bytes, unsigned grid, cudaStream_t stream) {
  static_assert(kBlock % 64 == 0, "copy_both_kernel gives even and odd warps equal shares");
  copy_both_kernel<<<grid, kBlock, 0, stream>>>(
      static_cast<unsigned char*>(dst_a), static_cast<const unsigned char*>(src_a),
      static_cast<unsigned char*>(dst_b), static_cast<const unsigned char*>(src_b), bytes);
  return cudaGetLastError();
}

}  // namespace memstress::kernels::detail
