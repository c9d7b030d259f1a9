// Host side of the elementwise and copy kernels: alignment checks, grid sizes, errors as exceptions.

#include "kernels/elementwise.hpp"

#include <algorithm>

#include "harness/core/cuda_check.hpp"
#include "kernels/copy.hpp"
#include "kernels/grid.hpp"
#include "kernels/launch.hpp"

namespace memstress::kernels {
namespace {

using detail::grid_for;

void aligned(const void* p) {
  detail::require_alignment(p, "elementwise op");
}

}  // namespace

void sm_copy(void* dst, const void* src, std::size_t bytes, cudaStream_t stream, unsigned sharing) {
  if (bytes == 0) {
    return;
  }
  detail::require_alignment(dst, "sm_copy");
  detail::require_alignment(src, "sm_copy");
  const unsigned grid = std::max(1U, grid_for(bytes / 16) / std::max(1U, sharing));
  MEMSTRESS_CUDA_TRY(detail::launch_copy(dst, src, bytes, grid, stream));
}

void sm_copy_both(void* dst_a, const void* src_a, void* dst_b, const void* src_b, std::size_t bytes,
                  cudaStream_t stream, unsigned sharing) {
  if (bytes == 0) {
    return;
  }
  for (const void* p : {static_cast<const void*>(dst_a), src_a, static_cast<const void*>(dst_b), src_b}) {
    detail::require_alignment(p, "sm_copy_both");
  }
  const unsigned grid = std::max(1U, grid_for(2 * (bytes / 16)) / std::max(1U, sharing));
  MEMSTRESS_CUDA_TRY(detail::launch_copy_both(dst_a, src_a, dst_b, src_b, bytes, grid, stream));
}

void init_uniform(float* x, std::uint64_t n, std::uint64_t seed, cudaStream_t stream) {
  aligned(x);
  MEMSTRESS_CUDA_TRY(detail::launch_init_uniform(x, n, seed, grid_for(n), stream));
}

void scale(float* out, const float* x, float a, std::uint64_t n, cudaStream_t stream) {
  aligned(out);
  aligned(x);
  MEMSTRESS_CUDA_TRY(detail::launch_scale(out, x, a, n, grid_for(n), stream));
}

void axpy(float* out, float a, const float* x, const float* y, std::uint64_t n, cudaStream_t stream) {
  aligned(out);
  aligned(x);
  aligned(y);
  MEMSTRESS_CUDA_TRY(detail::launch_axpy(out, a, x, y, n, grid_for(n), stream));
}

void relu(float* out, const float* x, std::uint64_t n, cudaStream_t stream) {
  aligned(out);
  aligned(x);
  MEMSTRESS_CUDA_TRY(detail::launch_relu(out, x, n, grid_for(n), stream));
}

void to_bf16(std::uint16_t* out, const float* x, std::uint64_t n, cudaStream_t stream) {
  aligned(out);
  aligned(x);
  MEMSTRESS_CUDA_TRY(detail::launch_to_bf16(out, x, n, grid_for(n), stream));
}

void from_bf16(float* out, const std::uint16_t* x, std::uint64_t n, cudaStream_t stream) {
  aligned(out);
  aligned(x);
  MEMSTRESS_CUDA_TRY(detail::launch_from_bf16(out, x, n, grid_for(n), stream));
}

void round_bf16(float* out, const float* x, std::uint64_t n, cudaStream_t stream) {
  aligned(out);
  aligned(x);
  MEMSTRESS_CUDA_TRY(detail::launch_round_bf16(out, x, n, grid_for(n), stream));
}

void chain_reference(float* out, const float* x, const float* y, float a, int rounds, std::uint64_t n,
                     cudaStream_t stream) {
  aligned(out);
  aligned(x);
  aligned(y);
  MEMSTRESS_CUDA_TRY(detail::launch_chain_reference(out, x, y, a, rounds, n, grid_for(n), stream));
}

}  // namespace memstress::kernels
