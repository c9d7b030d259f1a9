#include "kernels/grid.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>

#include "harness/core/cuda_check.hpp"
#include "harness/core/error.hpp"
#include "kernels/launch.hpp"

namespace memstress::kernels::detail {

unsigned grid_for(std::uint64_t items) {
  int device = 0;
  int sms = 0;
  MEMSTRESS_CUDA_TRY(cudaGetDevice(&device));
  MEMSTRESS_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::uint64_t wanted = std::max<std::uint64_t>(1, (items + kBlock - 1) / kBlock);
  return static_cast<unsigned>(std::min<std::uint64_t>(wanted, static_cast<std::uint64_t>(sms) * 8));
}

void require_alignment(const void* ptr, std::string_view what) {
  if (reinterpret_cast<std::uintptr_t>(ptr) % 16 != 0) {
    throw InputError(fmt::format("{}: buffer {} is not 16-byte aligned", what, ptr));
  }
}

}  // namespace memstress::kernels::detail
