// The health workload on a real GPU: NVML's reading of it, taken while copies keep the PCIe link busy (and
// verified on the device). What an H100 or H200 must give: ECC counts, XID events, the PCIe link against its
// maximum, NVLink's state and throttle times; and a GPU of today has no uncorrected ECC error to show.

#include <algorithm>
#include <cmath>
#include <string>

#include "gpu_test.hpp"
#include "harness/env/health.hpp"
#include "harness/memory/cuda_backend.hpp"
#include "workload_on_gpu.hpp"

namespace memstress {
namespace {

class HealthOnGpu : public testing::GpuTest {};

TEST_F(HealthOnGpu, NvmlGivesTheFiguresAcceptanceJudges) {
  const std::unique_ptr<HealthWatch> watch = run_health_watch(true, CudaBackend(0).info().uuid);
  ASSERT_EQ(watch->unavailable(), "");
  const auto rows = testing::run_on_gpu("health", {"bytes=16M"}, 1, watch.get());
  ASSERT_EQ(rows.size(), 1U);
  const Row& row = rows[0];
  // What every NVIDIA GPU of today gives; ECC counts only with ECC on.
  for (const char* figure : {"ecc.enabled", "xid.events", "pcie.gen", "pcie.gen_max", "pcie.gen_below_max",
                             "pcie.width", "pcie.width_below_max", "nvlink.active_links"}) {
    const MetricResult* m = row.metric(figure);
    ASSERT_NE(m, nullptr) << figure << " missing; notes: " << ::testing::PrintToString(row.notes);
    EXPECT_TRUE(std::isfinite(m->summary.median) && m->summary.median >= 0) << figure;
  }
  EXPECT_GE(row.metric("pcie.gen")->summary.median, 1);
  EXPECT_GE(row.metric("pcie.width")->summary.median, 1);
  // ECC counts are given exactly when ECC is on (the mode read after its query, not before).
  const bool ecc_on = row.metric("ecc.enabled")->summary.median == 1;
  EXPECT_EQ(row.metric("ecc.volatile.uncorrected") != nullptr, ecc_on);
  if (ecc_on) {
    EXPECT_EQ(row.metric("ecc.volatile.uncorrected")->summary.median, 0);
  }
  // Whatever is not measured says why, in a note accept reads.
  for (const HealthFigure& f : health_figures()) {
    if (row.metric(f.name) == nullptr) {
      const bool explained = std::any_of(row.notes.begin(), row.notes.end(), [&](const std::string& n) {
        return n.rfind(std::string(kNotMeasured) + std::string(f.name) + " (", 0) == 0;
      });
      EXPECT_TRUE(explained) << f.name << " neither measured nor explained";
    }
  }
}

// Note [Clocks during a bandwidth case]: each bandwidth row gets the time the clocks were held down while it
// ran, by cause, and the slowdown profiles judge; a case that is not a bandwidth case gets none. An H100 or
// H200 in a cooled rack is not slowed for heat or a power brake by a 64 MiB copy.
TEST_F(HealthOnGpu, BandwidthCasesRecordTheTimeTheirClocksWereHeldDown) {
  const std::unique_ptr<HealthWatch> watch = run_health_watch(true, CudaBackend(0).info().uuid);
  ASSERT_EQ(watch->unavailable(), "");
  const auto copies =
      testing::run_on_gpu("transfers", {"direction=h2d,d2d", "host=pinned", "bytes=64M"}, 3, watch.get());
  ASSERT_FALSE(copies.empty());
  for (const Row& row : copies) {
    ASSERT_EQ(row.verdict, Verdict::pass) << row.reason;
    // Every cause, the hardware slowdowns (NVML field values) among them: R580 gives them all on Hopper.
    for (const char* figure :
         {"throttle.power_ms", "throttle.thermal_ms", "throttle.sync_boost_ms", "throttle.hw_thermal_ms",
          "throttle.hw_power_brake_ms", "throttle.slowdown_ms"}) {
      const MetricResult* m = row.metric(figure);
      ASSERT_NE(m, nullptr) << figure << " missing; notes: " << ::testing::PrintToString(row.notes);
      EXPECT_GE(m->summary.median, 0) << figure;
    }
    EXPECT_EQ(row.metric("throttle.slowdown_ms")->summary.median, 0) << ::testing::PrintToString(row.notes);
  }
  const auto sizes = testing::run_on_gpu("alloc-smoke", {"bytes=1M"}, 1, watch.get());
  ASSERT_EQ(sizes.size(), 1U);
  EXPECT_EQ(sizes[0].metric("throttle.power_ms"), nullptr);
  EXPECT_EQ(sizes[0].metric("throttle.slowdown_ms"), nullptr);
}

}  // namespace
}  // namespace memstress
