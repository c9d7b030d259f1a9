// A GPU's history and two drivers across a fleet (harness/db/history.hpp, Note [Two drivers across a
// fleet]): series in time order with driver changes marked; a driver change judged over the GPUs that ran
// under both, GPUs seen under one driver left out, too few GPUs UNSURE.

#include <gtest/gtest.h>

#include <random>

#include "harness/db/history.hpp"

namespace memstress::db {
namespace {

MetricObservation seen(int gpu, const std::string& driver, const std::string& at, double median) {
  MetricObservation o;
  o.workload = "transfers";
  o.case_label = "direction=h2d bytes=64M";
  o.allocator = "caching";
  o.metric = "GB/s";
  o.unit = "GB/s";
  o.better = Better::higher;
  o.model = "NVIDIA H200";
  o.driver = driver;
  o.host = "node" + std::to_string(gpu);
  o.gpu_uuid = "GPU-" + std::to_string(gpu);
  o.started_at = at;
  o.median = median;
  return o;
}

TEST(FleetHistory, SeriesInTimeOrderWithDriverChangesMarked) {
  // Given out of order, as a query of several hosts may.
  const std::vector<HistorySeries> s =
      history({seen(1, "580", "2026-11-03T00:00:00Z", 50), seen(1, "570", "2026-11-01T00:00:00Z", 55),
               seen(1, "570", "2026-11-02T00:00:00Z", 54), seen(2, "570", "2026-11-01T00:00:00Z", 56)});
  ASSERT_EQ(s.size(), 2U);
  EXPECT_EQ(s[0].gpu_uuid, "GPU-1");
  ASSERT_EQ(s[0].points.size(), 3U);
  EXPECT_EQ(s[0].points[0].median, 55);
  EXPECT_EQ(s[0].points[1].previous_driver, "");
  EXPECT_EQ(s[0].points[2].previous_driver, "570");
  EXPECT_EQ(s[0].points[2].driver, "580");
  const std::string table = format_history_table(s);
  EXPECT_NE(table.find("<- driver 570 -> 580"), std::string::npos) << table;
  EXPECT_NE(table.find("-7.4%"), std::string::npos) << table;  // 54 -> 50
  EXPECT_NE(table.find("2 series on 2 GPU(s), 1 driver change(s) marked"), std::string::npos) << table;
  EXPECT_EQ(history_json(s)["series"][0]["points"][2]["driver_changed_from"], "570");
}

std::vector<MetricObservation> two_drivers(int gpus, double factor, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(55.0, 0.3);
  std::vector<MetricObservation> out;
  for (int g = 0; g < gpus; ++g) {
    const double base = noise(rng);
    out.push_back(seen(g, "570", "2026-11-01T00:00:00Z", base));
    out.push_back(seen(g, "580", "2026-11-08T00:00:00Z", base * factor * (1 + (noise(rng) - 55.0) / 5500)));
  }
  return out;
}

TEST(FleetDriverCompare, ASlowerDriverIsWorseOverTheGpusThatRanBoth) {
  std::vector<MetricObservation> fleet = two_drivers(16, 0.90, 1);
  fleet.push_back(seen(99, "580", "2026-11-08T00:00:00Z", 10));  // only under 580: left out
  const DriverComparison c = compare_drivers(fleet, "570", "580", {});
  ASSERT_EQ(c.groups.size(), 1U);
  EXPECT_EQ(c.groups[0].gpus, 16U);
  EXPECT_EQ(c.gpus_both, 16U);
  EXPECT_EQ(c.groups[0].judged.outcome, compare::Outcome::worse);
  EXPECT_NEAR(c.groups[0].paired_change_pct, -10, 0.5);
  EXPECT_NEAR(*c.groups[0].judged.change_pct, -10, 1.5);
  EXPECT_TRUE(c.regressed());
  EXPECT_NE(format_driver_table(c).find("1 WORSE, 0 BETTER"), std::string::npos);
}

TEST(FleetDriverCompare, TheSameDriverTwiceIsSameAndFasterIsBetter) {
  EXPECT_EQ(compare_drivers(two_drivers(16, 1.0, 2), "570", "580", {}).groups[0].judged.outcome,
            compare::Outcome::same);
  const DriverComparison faster = compare_drivers(two_drivers(16, 1.10, 3), "570", "580", {});
  EXPECT_EQ(faster.groups[0].judged.outcome, compare::Outcome::better);
  EXPECT_FALSE(faster.regressed());
}

TEST(FleetDriverCompare, FewGpusAreUnsureAndOneDriverOnlyIsCounted) {
  const DriverComparison few = compare_drivers(two_drivers(2, 0.8, 4), "570", "580", {});
  EXPECT_EQ(few.groups[0].judged.outcome, compare::Outcome::unsure);
  const DriverComparison none = compare_drivers(two_drivers(8, 0.8, 5), "570", "590", {});
  EXPECT_TRUE(none.groups.empty());
  EXPECT_EQ(none.groups_one_driver, 1U);
  EXPECT_EQ(none.gpus_both, 0U);
}

}  // namespace
}  // namespace memstress::db
