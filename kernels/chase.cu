// The pointer-chase kernels (chase.hpp): a grid-stride loop that writes the chain, and a single thread that
// follows it with volatile loads (no L1 caching, no reordering: each load needs the one before).

#include "kernels/chase.hpp"
#include "kernels/device_loop.cuh"
#include "kernels/launch.hpp"

namespace memstress::kernels::detail {
namespace {

__global__ void chase_init_kernel(unsigned char* region, std::uint64_t slots) {
  for (std::uint64_t k = global_thread(); k < slots; k += grid_threads()) {
    auto* slot = reinterpret_cast<std::uint64_t*>(region + k * kChaseStride);
    *slot = reinterpret_cast<std::uint64_t>(region + chase_next(k, slots) * kChaseStride);
  }
}

__global__ void chase_kernel(const unsigned char* region, std::uint64_t hops, std::uint64_t* end) {
  auto p = reinterpret_cast<std::uint64_t>(region);
  for (std::uint64_t i = 0; i < hops; ++i) {
    p = *reinterpret_cast<const volatile std::uint64_t*>(p);
  }
  *end = p;
}

}  // namespace

cudaError_t launch_chase_init(void* region, std::uint64_t slots, unsigned grid, cudaStream_t stream) {
  chase_init_kernel<<<grid, kBlock, 0, stream>>>(static_cast<unsigned char*>(region), slots);
  return cudaGetLastError();
}

cudaError_t launch_chase(const void* region, std::uint64_t hops, std::uint64_t* end, cudaStream_t stream) {
  chase_kernel<<<1, 1, 0, stream>>>(static_cast<const unsigned char*>(region), hops, end);
  return cudaGetLastError();
}

}  // namespace memstress::kernels::detail
