// Label multi-gpu: an NcclComm over the ranks of an MPI job, one GPU each, and an all-reduce through it.
// Run under mpirun with two ranks or more (ctest --preset gpu -L multi-gpu does). Every rank skips, the
// same way, when the job has fewer than 2 ranks or a rank has no GPU of its own. Its own main
// (tests/mpi/world_test_main.hpp).

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "harness/core/cuda_check.hpp"
#include "harness/core/nccl_check.hpp"
#include "harness/dist/nccl_comm.hpp"
#include "harness/dist/world.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "mpi/world_test_main.hpp"

namespace memstress {
namespace {

// Why this rank, or any rank, cannot run the test; empty when all can.
std::string skip_reason(World& world) {
  const int gpus = cuda::device_count();
  const bool mine = world.local_rank() < gpus;
  const std::vector<double> ok = world.all_gather(mine ? 1.0 : 0.0);
  if (world.size() < 2) {
    return "needs 2 ranks (run it under mpirun -np 2)";
  }
  if (std::any_of(ok.begin(), ok.end(), [](double v) { return v == 0.0; })) {
    return "needs 2 GPUs: one per rank";
  }
  return {};
}

void all_reduce_sums_every_rank(World& world) {
  if (const std::string reason = skip_reason(world); !reason.empty()) {
    GTEST_SKIP() << reason;
  }
  const int device = world.local_rank();
  const cuda::ScopedDevice current(device);
  NcclComm comm(world, device);
  ASSERT_EQ(comm.rank(), world.rank());
  ASSERT_EQ(comm.size(), world.size());

  constexpr std::size_t kCount = 1 << 20;
  std::vector<float> host(kCount);
  for (std::size_t i = 0; i < kCount; ++i) {
    host[i] = static_cast<float>(world.rank() + 1) + static_cast<float>(i % 7);
  }
  const cuda::DeviceBuffer buffer(kCount * sizeof(float));
  const cuda::Stream stream;
  MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(buffer.data(), host.data(), kCount * sizeof(float),
                                     cudaMemcpyHostToDevice, stream.get()));
  MEMSTRESS_NCCL_TRY(
      ncclAllReduce(buffer.data(), buffer.data(), kCount, ncclFloat, ncclSum, comm.get(), stream.get()));
  comm.wait(stream.get(), std::chrono::seconds(60), "all_reduce 4M");
  std::vector<float> result(kCount);
  MEMSTRESS_CUDA_TRY(
      cudaMemcpy(result.data(), buffer.data(), kCount * sizeof(float), cudaMemcpyDeviceToHost));

  const int n = world.size();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < kCount; ++i) {
    const float want =
        static_cast<float>(n * (n + 1) / 2) + static_cast<float>(n) * static_cast<float>(i % 7);
    wrong += result[i] == want ? 0U : 1U;
  }
  EXPECT_EQ(wrong, 0U) << "of " << kCount << " elements, after a sum over " << n << " ranks";
}

}  // namespace
}  // namespace memstress

int main(int argc, char** argv) {
  return memstress::testing::run_world_test(argc, argv, "MultiGpu", "NcclAllReduceSumsEveryRank",
                                            memstress::all_reduce_sums_every_rank);
}
