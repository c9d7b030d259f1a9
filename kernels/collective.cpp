// Host side of the collectives' fill and check kernels: grid sizes, error checks, the pinned result slot.

#include "kernels/collective.hpp"

#include "harness/core/cuda_check.hpp"
#include "kernels/collective_launch.hpp"
#include "kernels/grid.hpp"

namespace memstress::kernels {

void fill_collective_input(void* dst, DType type, std::uint64_t count, int rank, std::uint64_t salt,
                           std::uint64_t modulus, cudaStream_t stream) {
  if (count == 0) {
    return;
  }
  MEMSTRESS_CUDA_TRY(
      detail::launch_collective_fill(dst, type, count, rank, salt, modulus, detail::grid_for(count), stream));
}

CollectiveChecker::CollectiveChecker()
    : counters_(2 * sizeof(std::uint64_t)), result_(2 * sizeof(std::uint64_t)) {}

void CollectiveChecker::enqueue(const void* src, DType type, std::uint64_t count, const CollectiveCase& c,
                                cudaStream_t stream) {
  auto* counters = static_cast<unsigned char*>(counters_.data());
  MEMSTRESS_CUDA_TRY(cudaMemsetAsync(counters, 0x00, sizeof(std::uint64_t), stream));
  MEMSTRESS_CUDA_TRY(cudaMemsetAsync(counters + sizeof(std::uint64_t), 0xFF, sizeof(std::uint64_t), stream));
  if (count != 0) {
    MEMSTRESS_CUDA_TRY(detail::launch_collective_check(src, type, count, c,
                                                       static_cast<unsigned long long*>(counters_.data()),
                                                       detail::grid_for(count), stream));
  }
  MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(result_.data(), counters_.data(), 2 * sizeof(std::uint64_t),
                                     cudaMemcpyDeviceToHost, stream));
  checked_ = count;
}

CheckResult CollectiveChecker::result() const {
  const auto words = result_.as<const std::uint64_t>();
  CheckResult r;
  r.checked_words = checked_;
  r.bad_words = words[0];
  r.first_bad_word = words[1];
  return r;
}

}  // namespace memstress::kernels
