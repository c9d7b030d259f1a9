// The single-GPU workloads end to end on a real GPU through the Runner and the caching allocator: every
// case passes with its data verified on the device, and the figures are physically plausible.

#include <string>

#include "gpu_test.hpp"
#include "harness/alloc/factory.hpp"
#include "harness/alloc/pinned_host_allocator.hpp"
#include "harness/memory/cuda_backend.hpp"
#include "harness/run/runner.hpp"
#include "harness/run/sink.hpp"
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

TEST_F(WorkloadsOnGpu, TransfersAreVerifiedAndPinnedCopiesMatchThePlainLoop) {
  const auto rows =
      run("transfers", {"host=pinned,pageable,registered", "engine=ce,sm", "streams=1,4", "bytes=64M"});
  ASSERT_FALSE(rows.empty());
  for (const Row& row : rows) {
    EXPECT_GT(median_of(row, "GB/s"), 1.0) << row.case_label();
    if (row.metric("vs_ref") != nullptr && row.case_label().find("engine=ce") != std::string::npos) {
      EXPECT_GT(median_of(row, "vs_ref"), 0.8) << row.case_label();
    }
  }
}

TEST_F(WorkloadsOnGpu, StreamsHandBlocksAcrossStreamsWithoutDataErrors) {
  const auto rows = run("streams", {"bytes=64K,4M", "streams=1,8,32", "ops=100"});
  ASSERT_EQ(rows.size(), 6U);
  // One stream is bound by its own launches (about 0.4-0.7 of its compute kernels' time); more streams
  // must overlap more than one does at the same block size.
  const auto param = [](const Row& row, const char* name) {
    for (const auto& [k, v] : row.params) {
      if (k == name) {
        return v;
      }
    }
    return std::string();
  };
  for (const Row& one : rows) {
    if (param(one, "streams") != "1") {
      continue;
    }
    const double base = median_of(one, "concurrency");
    EXPECT_GT(base, 0.25) << one.case_label();
    for (const Row& many : rows) {
      if (param(many, "bytes") == param(one, "bytes") && param(many, "streams") != "1") {
        EXPECT_GT(median_of(many, "concurrency"), 1.2 * base) << many.case_label();
      }
    }
  }
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
  for (const Row& row : rows) {
    EXPECT_GT(median_of(row, "h2d_GB/s"), 0.5) << row.case_label();
  }
}

// integrity tests the share of free memory it is asked for, to the 2 MiB page (its last block is the
// remainder), so the acceptance profiles' fraction 0.95 of free covers at least 90% of a fresh GPU's memory.
TEST_F(WorkloadsOnGpu, IntegrityCoversTheShareOfFreeMemoryItIsAskedFor) {
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
