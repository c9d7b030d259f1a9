// The p2p workload and its pointer chase on real GPUs: a chase through one GPU's own memory ends where the
// chain's arithmetic says; with two or more GPUs every p2p case passes with its copies verified.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "gpu_test.hpp"
#include "harness/alloc/factory.hpp"
#include "harness/alloc/pinned_host_allocator.hpp"
#include "harness/core/cuda_check.hpp"
#include "harness/memory/cuda_backend.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "harness/memory/device_spec.hpp"
#include "harness/memory/driver_api.hpp"
#include "harness/results/sink.hpp"
#include "harness/run/plan.hpp"
#include "harness/run/runner.hpp"
#include "kernels/chase.hpp"
#include "suites/registry.hpp"
#include "workload_on_gpu.hpp"

namespace memstress {
namespace {

class P2pTest : public testing::GpuTest {};

// What the context tests need: two GPUs and a driver that says whether a primary context is active. Skips
// the test otherwise (the caller returns when IsSkipped()); the death tests run in a fresh process.
void needs_two_gpus_and_context_state() {
  if (cuda::device_count() < 2) {
    GTEST_SKIP() << "needs 2 GPUs";
  }
  if (driver_api().device_primary_ctx_get_state == nullptr) {
    GTEST_SKIP() << "this driver gives no cuDevicePrimaryCtxGetState";
  }
  GTEST_FLAG_SET(death_test_style, "threadsafe");
}

// Note [No context on a GPU nobody chose] (harness/memory/cuda_handles.cpp): a process that drives cuda:1, as
// an mpirun rank does, and a thread of it that makes cuda:1 current, leave cuda:0 without a context. In a
// process of its own (a threadsafe death test re-runs the test in a fresh process), so no context is there
// before.
TEST_F(P2pTest, DrivingOneGpuMakesNoContextOnAnother) {
  needs_two_gpus_and_context_state();
  if (IsSkipped()) {
    return;
  }
  EXPECT_EXIT(
      {
        const std::unique_ptr<DeviceBackend> backend = make_backend(DeviceSpec::parse("cuda:1", "--device"));
        std::thread([] {
          const cuda::ScopedDevice on(1);
          MEMSTRESS_CUDA_TRY(cudaFree(nullptr));
        }).join();
        std::_Exit(cuda::primary_context_active(0) == false ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(P2pTest, ChaseEndsWhereTheChainSays) {
  const cuda::Stream stream;
  constexpr std::uint64_t kBytes = 4ULL << 20U;
  const cuda::DeviceBuffer region(kBytes);
  const cuda::DeviceBuffer end(sizeof(std::uint64_t));
  const std::uint64_t slots = kernels::chase_slots(kBytes);
  kernels::chase_init(region.data(), slots, stream.get());
  kernels::chase(region.data(), 5000, static_cast<std::uint64_t*>(end.data()), stream.get());
  std::uint64_t got = 0;
  MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(&got, end.data(), sizeof got, cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  EXPECT_EQ(got, reinterpret_cast<std::uint64_t>(region.data()) +
                     kernels::chase_slot_after(5000, slots) * kernels::kChaseStride);
}

TEST_F(P2pTest, EveryCaseOfTheMatrixPassesWithItsCopiesVerified) {
  if (cuda::device_count() < 2) {
    GTEST_SKIP() << "needs 2 GPUs";
  }
  for (const Row& row : testing::run_on_gpu("p2p", {"bytes=64M"}, 2)) {
    const bool latency = row.case_label().find("measure=latency") != std::string::npos;
    const MetricResult* m = row.metric(latency ? "latency_us max" : "GB/s min");
    ASSERT_NE(m, nullptr) << row.case_label();
    EXPECT_GT(m->summary.median, 0.0) << row.case_label();
    if (!latency) {
      const MetricResult* refused = row.metric("peer_refused");
      ASSERT_NE(refused, nullptr) << row.case_label();
      EXPECT_EQ(refused->summary.median, 0.0)
          << row.case_label();  // every pair of this node reaches the other
    }
  }
}

// cuda::PrimaryContextsAsFound: the rank that measures the matrix opens every GPU, and leaves none of the
// others with a context of its own once the case is over (every other rank's GPU would count it as one more
// process). In a process of its own, as above.
TEST_F(P2pTest, TheMatrixLeavesNoContextOnTheOtherGpus) {
  needs_two_gpus_and_context_state();
  if (IsSkipped()) {
    return;
  }
  EXPECT_EXIT(
      {
        const std::vector<Row> rows =
            testing::run_on_gpu("p2p", {"bytes=16M", "measure=bandwidth", "engine=ce", "direction=uni"}, 1);
        int left = 0;
        for (int d = 1; d < cuda::device_count(); ++d) {
          left += cuda::primary_context_active(d) == false ? 0 : 1;
        }
        std::_Exit(!rows.empty() && rows.front().verdict == Verdict::pass && left == 0 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace memstress
