// The fleet's outlier rule (harness/db/outliers.hpp, Note [Fleet outliers: median and MAD]): planted slow
// GPUs found and ranked, healthy ones not flagged, faster ones never, groups too small not judged.

#include <gtest/gtest.h>

#include <algorithm>
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
  fleet.reserve(static_cast<std::size_t>(n));
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
  latency.reserve(20);
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
  fleet.reserve(10);
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

// `n` GPUs, each run `runs` times: its level 55 GB/s + 0.5%, each run's value its level + `run_noise`.
std::vector<MetricObservation> noisy_runs(int n, int runs, double run_noise, unsigned seed = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> level(55.0, 0.275);
  std::normal_distribution<double> noise(0.0, run_noise);
  std::vector<MetricObservation> fleet;
  for (int i = 0; i < n; ++i) {
    const double own = level(rng);
    for (int r = 0; r < runs; ++r) {
      fleet.push_back(gpu(i, own + noise(rng)));
    }
  }
  return fleet;
}

TEST(FleetOutliers, AGpusOwnStandardErrorCounts) {
  // 64 GPUs of 16 runs, each run +-5%: their medians agree to about 1.6%. A GPU new to the fleet ran once, 7%
  // low: about 4 S from the median, but one run scatters 5%, so that is no evidence of a slow GPU.
  std::vector<MetricObservation> fleet = noisy_runs(64, 16, 2.75);
  fleet.push_back(gpu(100, 55.0 * 0.93));
  const OutlierReport r = find_outliers(fleet, {});
  for (const Outlier& o : r.outliers) {
    EXPECT_NE(o.gpu_uuid, "GPU-100") << "one run 7% low, runs scatter 5%";
  }
  // A GPU 20% slow in every run is found, and its spread counts its standard error.
  for (int run = 0; run < 16; ++run) {
    fleet[std::size_t{16} * 9 + static_cast<std::size_t>(run)].median = 55.0 * 0.80;
  }
  const OutlierReport slow = find_outliers(fleet, {});
  ASSERT_EQ(slow.outliers.size(), 1U);
  EXPECT_EQ(slow.outliers[0].gpu_uuid, "GPU-9");
  EXPECT_EQ(slow.outliers[0].runs, 16U);
  EXPECT_GT(slow.outliers[0].spread, 0.01 * 55.0);
}

TEST(FleetOutliers, ABimodalGpuDoesNotHideBehindItsOwnScatter) {
  // Siblings steady to 0.1% run to run; GPU-3 is slow (30%) in half its runs: its median lies far below,
  // and the scatter that counts is the group's (small), not its own (large).
  std::vector<MetricObservation> fleet = noisy_runs(32, 6, 0.055);
  for (int r = 0; r < 6; ++r) {
    fleet[std::size_t{6} * 3 + static_cast<std::size_t>(r)].median = r % 2 == 0 ? 38.5 : 55.0;
  }
  const OutlierReport r = find_outliers(fleet, {});
  ASSERT_EQ(r.outliers.size(), 1U);
  EXPECT_EQ(r.outliers[0].gpu_uuid, "GPU-3");
  // Nor where it is the only GPU that ran more than once (fewer than 5 such GPUs: no W, the plain rule).
  std::vector<MetricObservation> once = noisy_runs(8, 1, 0.055);
  for (int run = 0; run < 12; ++run) {
    once.push_back(gpu(20, run % 2 == 0 ? 27.0 : 55.0));
  }
  const OutlierReport alone = find_outliers(once, {});
  ASSERT_EQ(alone.outliers.size(), 1U);
  EXPECT_EQ(alone.outliers[0].gpu_uuid, "GPU-20");
}

TEST(FleetOutliers, AGpuOfTwoRunsIsSlowOnlyWhereBothRunsAre) {
  // 64 GPUs of two runs, steady to 0.1% run to run. GPU-5 ran once 10% slow (a copy that met its neighbours'
  // traffic) and once as its siblings: its median, the runs' mean, lies 5% low, past the 3.5% cut, but one
  // run is no evidence of a slow GPU. GPU-7 was 8% slow in both runs: found, scored by the better of them.
  std::vector<MetricObservation> fleet = noisy_runs(64, 2, 0.055);
  fleet[std::size_t{2} * 5].median = 55.0 * 0.90;
  fleet[std::size_t{2} * 7].median = 55.0 * 0.92;
  fleet[std::size_t{2} * 7 + 1].median = 55.0 * 0.921;
  OutlierOptions options;
  options.keep_groups = true;
  const OutlierReport r = find_outliers(fleet, options);
  ASSERT_EQ(r.outliers.size(), 1U);
  EXPECT_EQ(r.outliers[0].gpu_uuid, "GPU-7");
  EXPECT_EQ(r.outliers[0].runs, 2U);
  EXPECT_NEAR(r.outliers[0].value, 55.0 * 0.9205, 1e-9);                       // the median shown
  EXPECT_NEAR(r.outliers[0].spread, 0.01 * r.outliers[0].group_median, 1e-9);  // S: the floor, no E
  // Its score: the better run's distance (7.9%) in S (1%).
  EXPECT_NEAR(r.outliers[0].score, 7.9, 0.2);
  // The limit the report draws is on the median: both runs past the cut.
  ASSERT_EQ(r.groups.size(), 1U);
  const auto five = std::find_if(r.groups[0].gpus.begin(), r.groups[0].gpus.end(),
                                 [](const GroupValues::Gpu& g) { return g.uuid == "GPU-5"; });
  ASSERT_NE(five, r.groups[0].gpus.end());
  EXPECT_LT(five->limit, r.groups[0].median * (1 - 0.035));
  EXPECT_GT(five->value, five->limit);
}

TEST(FleetOutliers, RowIdsOnlySpeedThingsUp) {
  // The same observations with row ids give the same answer as without: a row's metrics come one after
  // another, but ids come back out of order, and one id is reused by another GPU (as two stores' may be).
  std::vector<MetricObservation> plain = healthy_fleet(16);
  plain[3].median = 40;
  std::vector<MetricObservation> with_ids;
  for (std::size_t i = 0; i < plain.size(); ++i) {
    for (const char* metric : {"GB/s", "ref_GB/s"}) {
      MetricObservation o = plain[i];
      o.metric = metric;
      // 1, 1, 2, 2, 3, 3, 1, 1, ...: one id for two GPUs one after another, and ids coming back
      o.row_id = static_cast<std::int64_t>(i / 2 % 3 + 1);
      with_ids.push_back(o);
    }
  }
  std::vector<MetricObservation> both_metrics;
  for (const MetricObservation& o : with_ids) {
    MetricObservation p = o;
    p.row_id = 0;
    both_metrics.push_back(p);
  }
  const OutlierReport a = find_outliers(with_ids, {});
  const OutlierReport b = find_outliers(both_metrics, {});
  EXPECT_EQ(a.gpus, 16U);
  EXPECT_EQ(a.groups_judged, 2U);
  ASSERT_EQ(a.outliers.size(), 2U);
  ASSERT_EQ(b.outliers.size(), 2U);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(a.outliers[i].gpu_uuid, "GPU-3");
    EXPECT_EQ(a.outliers[i].metric, b.outliers[i].metric);
    EXPECT_EQ(a.outliers[i].score, b.outliers[i].score);
  }
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
  EXPECT_EQ(r.groups[0].run_spread, 0);  // one run each
  for (const GroupValues::Gpu& g : r.groups[0].gpus) {
    EXPECT_EQ(g.runs, 1U);
    EXPECT_NEAR(g.limit, r.groups[0].median - 3.5 * r.groups[0].spread, 1e-9);
  }
  EXPECT_TRUE(find_outliers(fleet, {}).groups.empty());  // not kept unless asked
}

}  // namespace
}  // namespace memstress::db
