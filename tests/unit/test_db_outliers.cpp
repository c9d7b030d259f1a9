// The fleet's outlier rule (harness/db/outliers.hpp, Note [Fleet outliers: median and MAD]): planted slow
// GPUs found and ranked, healthy ones not flagged, faster ones never, groups too small not judged.

#include <gtest/gtest.h>

#include <random>

#include "harness/db/outliers.hpp"

namespace memstress::db {
namespace {

MetricObservation gpu(int index, double median, Better better = Better::higher,
                      std::string model = "NVIDIA H200", std::string metric = "GB/s") {
  MetricObservation o;
  o.workload = "transfers";
  o.case_label = "direction=h2d bytes=256M";
  o.allocator = "caching";
  o.metric = std::move(metric);
  o.unit = "GB/s";
  o.better = better;
  o.model = std::move(model);
  o.driver = "580.159.04";
  o.host = "node" + std::to_string(index / 8);
  o.gpu_uuid = "GPU-" + std::to_string(index);
  o.pci_bus_id = "0000:0" + std::to_string(index % 8) + ":00.0";
  o.median = median;
  return o;
}

// `n` healthy GPUs around 55 GB/s with 0.5% noise.
std::vector<MetricObservation> healthy_fleet(int n, unsigned seed = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(55.0, 0.275);
  std::vector<MetricObservation> fleet;
  for (int i = 0; i < n; ++i) {
    fleet.push_back(gpu(i, noise(rng)));
  }
  return fleet;
}

TEST(FleetOutliers, FindsPlantedSlowGpusAndRanksThemByDistance) {
  std::vector<MetricObservation> fleet = healthy_fleet(64);
  fleet[10].median = 55.0 * 0.90;  // 10% slow
  fleet[20].median = 55.0 * 0.95;  // 5% slow
  const OutlierReport r = find_outliers(fleet, {});
  ASSERT_EQ(r.outliers.size(), 2U);
  EXPECT_EQ(r.outliers[0].gpu_uuid, "GPU-10");
  EXPECT_EQ(r.outliers[1].gpu_uuid, "GPU-20");
  EXPECT_GT(r.outliers[0].score, r.outliers[1].score);
  EXPECT_NEAR(r.outliers[0].worse_pct, 10, 1);
  EXPECT_EQ(r.outliers[0].host, "node1");
  EXPECT_EQ(r.outliers[0].pci_bus_id, "0000:02:00.0");
  EXPECT_EQ(r.outliers[0].group_gpus, 64U);
  EXPECT_EQ(r.groups_judged, 1U);
  EXPECT_EQ(r.gpus, 64U);
}

TEST(FleetOutliers, HealthyFleetsAreNotFlagged) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    const OutlierReport r = find_outliers(healthy_fleet(200, seed), {});
    EXPECT_TRUE(r.outliers.empty()) << "seed " << seed << ": " << r.outliers.front().gpu_uuid;
  }
}

TEST(FleetOutliers, OnlyTheWorseDirectionCounts) {
  std::vector<MetricObservation> fleet = healthy_fleet(20);
  fleet[3].median = 55.0 * 1.2;  // faster: not a fault
  EXPECT_TRUE(find_outliers(fleet, {}).outliers.empty());
  // Lower is better (a latency): the high one is the outlier, the low one is not.
  std::vector<MetricObservation> latency;
  for (int i = 0; i < 20; ++i) {
    latency.push_back(gpu(i, 10.0 + 0.01 * (i % 5), Better::lower, "NVIDIA H200", "alloc"));
  }
  latency[4].median = 20.0;
  latency[5].median = 5.0;
  const OutlierReport r = find_outliers(latency, {});
  ASSERT_EQ(r.outliers.size(), 1U);
  EXPECT_EQ(r.outliers[0].gpu_uuid, "GPU-4");
}

TEST(FleetOutliers, TinyGroupsAreNotJudged) {
  std::vector<MetricObservation> fleet = healthy_fleet(4);
  fleet[0].median = 1.0;  // far off, but among 4 GPUs only
  const OutlierReport r = find_outliers(fleet, {});
  EXPECT_TRUE(r.outliers.empty());
  EXPECT_EQ(r.groups_too_small, 1U);
  EXPECT_EQ(r.groups_judged, 0U);
  OutlierOptions three;
  three.min_gpus = 3;
  EXPECT_EQ(find_outliers(fleet, three).outliers.size(), 1U);
}

TEST(FleetOutliers, TheRelativeFloorKeepsIdenticalGpusFromFlaggingNoise) {
  // Every GPU at the same figure but one, 1% off: the MAD is 0, so without the floor 1% would be
  // infinitely far; with it the GPU must be 3.5% worse.
  std::vector<MetricObservation> fleet;
  for (int i = 0; i < 10; ++i) {
    fleet.push_back(gpu(i, 100.0));
  }
  fleet[7].median = 99.0;
  EXPECT_TRUE(find_outliers(fleet, {}).outliers.empty());
  fleet[7].median = 95.0;
  EXPECT_EQ(find_outliers(fleet, {}).outliers.size(), 1U);
}

TEST(FleetOutliers, GroupsByModelAndDriverAndCountsEachGpuOnce) {
  std::vector<MetricObservation> fleet = healthy_fleet(10);
  // An H100 is slower than the H200s, but it is judged among H100s (a group of one: not judged).
  fleet.push_back(gpu(100, 30.0, Better::higher, "NVIDIA H100"));
  // GPU-2 ran three times: one slow run among its own is a median of three, not an outlier.
  fleet.push_back(gpu(2, 40.0));
  fleet.push_back(gpu(2, 55.0));
  const OutlierReport r = find_outliers(fleet, {});
  EXPECT_TRUE(r.outliers.empty());
  EXPECT_EQ(r.groups_judged, 1U);
  EXPECT_EQ(r.groups_too_small, 1U);
  EXPECT_EQ(r.gpus, 11U);
}

TEST(FleetOutliers, GroupsAreKeptWholeWhenAsked) {
  std::vector<MetricObservation> fleet = healthy_fleet(16);
  fleet[3].median = 40;
  OutlierOptions keep;
  keep.keep_groups = true;
  const OutlierReport r = find_outliers(fleet, keep);
  ASSERT_EQ(r.groups.size(), 1U);
  EXPECT_EQ(r.groups[0].gpus.size(), 16U);
  EXPECT_EQ(r.groups[0].metric, "GB/s");
  EXPECT_NEAR(r.groups[0].median, 55, 0.5);
  EXPECT_GT(r.groups[0].spread, 0);
  EXPECT_TRUE(find_outliers(fleet, {}).groups.empty());  // not kept unless asked
}

}  // namespace
}  // namespace memstress::db
