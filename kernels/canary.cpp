// Host side of the canary's kernels (canary.hpp).

#include "kernels/canary.hpp"

#include "harness/core/cuda_check.hpp"
#include "harness/core/error.hpp"
#include "kernels/grid.hpp"
#include "kernels/launch.hpp"

namespace memstress::kernels {

void init_bf16(std::uint16_t* x, std::size_t n, std::uint64_t seed, cudaStream_t stream) {
  MEMSTRESS_CUDA_TRY(detail::launch_init_bf16(x, n, seed, detail::grid_for(n), stream));
}

void init_f64(double* x, std::size_t n, std::uint64_t seed, cudaStream_t stream) {
  MEMSTRESS_CUDA_TRY(detail::launch_init_f64(x, n, seed, detail::grid_for(n), stream));
}

void hash_words(const void* src, std::size_t bytes, unsigned long long* out, cudaStream_t stream) {
  if (bytes % 8 != 0) {
    throw InputError("hash_words: the result's size must be a multiple of 8 bytes");
  }
  MEMSTRESS_CUDA_TRY(cudaMemsetAsync(out, 0, sizeof(*out), stream));
  MEMSTRESS_CUDA_TRY(detail::launch_hash(src, bytes / 8, out, detail::grid_for(bytes / 8), stream));
}

}  // namespace memstress::kernels
