// The single-GPU workloads end to end on a real GPU through the Runner and the caching allocator: every
// case passes with its data verified on the device, and the figures are physically plausible.

#include <string>

#include "gpu_test.hpp"
#include "harness/alloc/factory.hpp"
#include "harness/alloc/pinned_host_allocator.hpp"
#include "harness/memory/cuda_backend.hpp"
#include "harness/results/sink.hpp"
#include "harness/run/runner.hpp"
#include "suites/registry.hpp"
#include "workload_on_gpu.hpp"

namespace memstress {
namespace {

class WorkloadsOnGpu : public testing::GpuTest {
 protected:
  static std::vector<Row> run(const std::string& workload, const std::vector<std::string>& overrides) {
    return testing::run_on_gpu(workload, overrides);
  }
};

double median_of(const Row& row, const char* metric) {
  const MetricResult* m = row.metric(metric);
  EXPECT_NE(m, nullptr) << row.case_label() << " has no " << metric;
  return m == nullptr ? -1 : m->summary.median;
}

// What these runs measure is judged in test_timing.cpp (label `timing`, left out of sanitizer runs); here,
// that every case passes with its data verified on the device.
TEST_F(WorkloadsOnGpu, TransfersAreVerified) {
  const auto rows =
      run("transfers", {"host=pinned,pageable,registered", "engine=ce,sm", "streams=1,4", "bytes=64M"});
  EXPECT_FALSE(rows.empty());
}

// Note [Both ways at once]: by SM each direction is half of both at once (one split-warp kernel); by copy
// engine each is timed in a window of its own while the other moves twice its bytes, so the two share the
// link as they do at once: together about both at once, neither above it.
TEST_F(WorkloadsOnGpu, BothWaysAtOnceTimesEachDirectionUnderTheOthersLoad) {
  // Under compute-sanitizer (testing::sanitizer_sizes): the same 4 cases, smaller.
  const auto rows = run("transfers", {"direction=bidir", "host=pinned", "engine=ce,sm", "streams=1,4",
                                      testing::sanitizer_sizes() ? "bytes=4M" : "bytes=64M"});
  ASSERT_EQ(rows.size(), 4U);
  for (const Row& row : rows) {
    const double both = median_of(row, "GB/s");
    const double h2d = median_of(row, "h2d_GB/s");
    const double d2h = median_of(row, "d2h_GB/s");
    if (row.case_label().find("engine=sm") != std::string::npos) {
      EXPECT_NEAR(h2d, both / 2, 0.001 * both) << row.case_label();
      EXPECT_NEAR(d2h, both / 2, 0.001 * both) << row.case_label();
      continue;
    }
    EXPECT_GT(h2d, 0.0) << row.case_label();
    EXPECT_GT(d2h, 0.0) << row.case_label();
    EXPECT_LE(h2d, 1.05 * both) << row.case_label();
    EXPECT_LE(d2h, 1.05 * both) << row.case_label();
    EXPECT_GE(h2d + d2h, 0.8 * both) << row.case_label();
  }
}

TEST_F(WorkloadsOnGpu, StreamsHandBlocksAcrossStreamsWithoutDataErrors) {
  // Under compute-sanitizer (testing::sanitizer_sizes): the same 6 cases, smaller and shorter.
  const auto rows = testing::sanitizer_sizes()
                        ? run("streams", {"bytes=16K,64K", "streams=1,4,8", "ops=10"})
                        : run("streams", {"bytes=64K,4M", "streams=1,8,32", "ops=100"});
  EXPECT_EQ(rows.size(), 6U);
}

TEST_F(WorkloadsOnGpu, InplaceAndOutOfPlaceAgreeBitForBit) {
  const auto rows = run("inplace", {"bytes=64M,100M", "rounds=1,3"});
  for (const Row& row : rows) {
    EXPECT_EQ(median_of(row, "inplace_extra_peak"), 0.0) << row.case_label();
    EXPECT_GT(median_of(row, "outofplace_extra_peak"), 0.9) << row.case_label();
  }
}

TEST_F(WorkloadsOnGpu, DataloaderDeliversEveryBatchFromThreadsAndProcesses) {
  const auto rows = run("dataloader", {"workers=thread,process", "pin=true,false", "bytes=8M", "batches=32"});
  EXPECT_EQ(rows.size(), 4U);
}

// integrity tests the share of free memory it is asked for, to the 2 MiB page (its last block is the
// remainder), so the acceptance profiles' fraction 0.95 of free covers at least 90% of a fresh GPU's memory.
// Suite WholeGpu: label `gpu-whole` (it fills the GPU; compute-sanitizer runs integrity on a small share).
using testing::WholeGpu;

TEST_F(WholeGpu, IntegrityCoversTheShareOfFreeMemoryItIsAskedFor) {
  const MemInfo before = CudaBackend(0).mem_info();
  const auto rows = testing::run_on_gpu("integrity", {"fraction=0.95", "patterns=random+address"}, 1);
  ASSERT_EQ(rows.size(), 1U);
  const double expected = 0.95 * static_cast<double>(before.free) / static_cast<double>(before.total);
  EXPECT_NEAR(median_of(rows[0], "coverage"), expected, 0.005);
  EXPECT_EQ(median_of(rows[0], "persistent_errors"), 0.0);
  EXPECT_EQ(median_of(rows[0], "transient_errors"), 0.0);
}

}  // namespace
}  // namespace memstress
