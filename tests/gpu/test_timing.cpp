// What the GPU workloads measure, judged: bandwidths above a floor any datacenter GPU clears, copies as fast
// as the plain reference loop, streams that overlap. Label `timing` (tests/CMakeLists.txt: the suite name
// GpuTiming selects it): these hold on a GPU left to itself, not under compute-sanitizer, which slows every
// kernel and copy by orders of magnitude, so scripts/lab/gpu-sanitize leaves them out. The data of the same
// runs is checked in test_workloads.cpp and test_smoke.cpp, which the sanitizers do run.

#include <string>
#include <vector>

#include "gpu_test.hpp"
#include "workload_on_gpu.hpp"

namespace memstress {
namespace {

class GpuTiming : public testing::GpuTest {};

double median_of(const Row& row, const char* metric) {
  const MetricResult* m = row.metric(metric);
  EXPECT_NE(m, nullptr) << row.case_label() << " has no " << metric;
  return m == nullptr ? -1 : m->summary.median;
}

std::string param(const Row& row, const char* name) {
  for (const auto& [k, v] : row.params) {
    if (k == name) {
      return v;
    }
  }
  return {};
}

TEST_F(GpuTiming, SmokeFillsFasterThan100GBs) {
  for (const Row& row : testing::run_on_gpu("smoke", {"bytes=64M,1G", "pattern=random"}, 3)) {
    EXPECT_GT(median_of(row, "fill"), 100.0) << row.case_label();  // any HBM GPU fills far faster than this
  }
}

TEST_F(GpuTiming, TransfersMoveDataAndCopyEnginesMatchThePlainLoop) {
  const auto rows = testing::run_on_gpu(
      "transfers", {"host=pinned,pageable,registered", "engine=ce,sm", "streams=1,4", "bytes=64M"});
  ASSERT_FALSE(rows.empty());
  for (const Row& row : rows) {
    EXPECT_GT(median_of(row, "GB/s"), 1.0) << row.case_label();
    if (row.metric("vs_ref") != nullptr && param(row, "engine") == "ce") {
      EXPECT_GT(median_of(row, "vs_ref"), 0.8) << row.case_label();
    }
  }
}

TEST_F(GpuTiming, MoreStreamsOverlapMoreThanOne) {
  const auto rows = testing::run_on_gpu("streams", {"bytes=64K,4M", "streams=1,8,32", "ops=100"});
  ASSERT_EQ(rows.size(), 6U);
  // One stream is bound by its own launches (about 0.4-0.7 of its compute kernels' time); more streams
  // must overlap more than one does at the same block size.
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

TEST_F(GpuTiming, DataloaderMovesAtLeastHalfAGBs) {
  const auto rows = testing::run_on_gpu(
      "dataloader", {"workers=thread,process", "pin=true,false", "bytes=8M", "batches=32"});
  ASSERT_EQ(rows.size(), 4U);
  for (const Row& row : rows) {
    EXPECT_GT(median_of(row, "h2d_GB/s"), 0.5) << row.case_label();
  }
}

}  // namespace
}  // namespace memstress
