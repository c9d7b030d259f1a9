#include "kernels/chase.hpp"

#include "harness/core/cuda_check.hpp"
#include "kernels/grid.hpp"

namespace memstress::kernels {

void chase_init(void* region, std::uint64_t slots, cudaStream_t stream) {
  MEMSTRESS_CUDA_TRY(detail::launch_chase_init(region, slots, detail::grid_for(slots), stream));
}

void chase(const void* region, std::uint64_t hops, std::uint64_t* end, cudaStream_t stream) {
  MEMSTRESS_CUDA_TRY(detail::launch_chase(region, hops, end, stream));
}

}  // namespace memstress::kernels
