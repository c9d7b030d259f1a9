// A profile's floors from a fleet (harness/db/fleet_train.hpp, Note [Floors from the fleet]).

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "harness/accept/profile.hpp"
#include "harness/core/error.hpp"
#include "harness/db/fleet_train.hpp"

namespace memstress::db {
namespace {

MetricObservation seen(const std::string& gpu, double median, const std::string& metric = "GB/s",
                       Better better = Better::higher, int ranks = 1,
                       const std::string& driver = "580.159.04") {
  MetricObservation o;
  o.workload = "transfers";
  o.case_label = "direction=h2d host=pinned engine=ce streams=1 bytes=256M";
  o.allocator = "caching";
  o.metric = metric;
  o.unit = metric == "GB/s" ? "GB/s" : "us";
  o.better = better;
  o.model = "NVIDIA H100 80GB HBM3";
  o.driver = driver;
  o.concurrent_ranks = ranks;
  o.gpu_uuid = gpu;
  o.median = median;
  return o;
}

AcceptCheck check(const std::string& name, const std::string& metric,
                  std::vector<std::pair<std::string, std::string>> where = {}) {
  AcceptCheck c;
  c.name = name;
  c.workload = "transfers";
  c.metric = metric;
  c.where = std::move(where);
  return c;
}

Profile profile() {
  Profile p;
  p.name = "h100";
  p.gpu = "NVIDIA H100 80GB HBM3";
  AcceptCheck h2d = check("h2d", "GB/s", {{"direction", "h2d"}, {"bytes", "256M"}});
  h2d.golden = 55.0;
  AcceptCheck latency = check("latency", "us");
  latency.golden = 10.0;
  AcceptCheck errors = check("errors", "verification.errors");
  errors.max = 0.0;
  AcceptCheck d2h = check("d2h", "GB/s", {{"direction", "d2h"}});
  d2h.golden = 55.0;
  p.checks = {h2d, latency, errors, d2h};
  return p;
}

FleetTrainOptions options(double k = 3.0, std::string driver = "", std::size_t min_gpus = 5) {
  FleetTrainOptions o;
  o.k = k;
  o.driver = std::move(driver);
  o.driver_what = "the driver";
  o.min_gpus = min_gpus;
  return o;
}

// Six GPUs at 50..55 GB/s (one slow at 40) and latencies 10..15 us, several runs each.
std::vector<MetricObservation> fleet() {
  std::vector<MetricObservation> out;
  const std::vector<double> gb = {50, 51, 52, 53, 54, 40};
  for (std::size_t i = 0; i < gb.size(); ++i) {
    const std::string gpu = "GPU-" + std::to_string(i);
    out.push_back(seen(gpu, gb[i] - 1));  // a GPU's value is the median of its runs
    out.push_back(seen(gpu, gb[i]));
    out.push_back(seen(gpu, gb[i] + 1));
    out.push_back(seen(gpu, 10.0 + static_cast<double>(i), "us", Better::lower));
  }
  return out;
}

TEST(FleetTrain, FloorIsTheMedianLessKScaledMadsAndSaysWhereItCameFrom) {
  Profile p = profile();
  const FleetTraining t = train_from_fleet(p, fleet(), options());
  ASSERT_EQ(t.trained.size(), 2U);
  // Medians 50,51,52,53,54,40 -> M 51.5; distances 1.5,0.5,0.5,1.5,2.5,11.5 -> MAD 1.5; S = 1.4826 x 1.5.
  const double s = 1.4826 * 1.5;
  EXPECT_DOUBLE_EQ(t.trained[0].median, 51.5);
  EXPECT_NEAR(t.trained[0].spread, s, 1e-9);
  ASSERT_TRUE(p.checks[0].min.has_value());
  EXPECT_NEAR(*p.checks[0].min, 51.5 - 3 * s, 1e-9);
  EXPECT_FALSE(p.checks[0].golden.has_value());
  EXPECT_EQ(p.checks[0].source,
            "fleet: median 51.5 GB/s - 3 x 2.224 GB/s (scaled MAD) over 6 GPUs, driver 580.159.04");
  // Lower is better: a ceiling. Medians 10..15 -> M 12.5, MAD 1.5.
  ASSERT_TRUE(p.checks[1].max.has_value());
  EXPECT_NEAR(*p.checks[1].max, 12.5 + 3 * s, 1e-9);
  EXPECT_FALSE(t.trained[1].at_least);
  // An absolute check is left alone; a check no row matched keeps its golden value and says why.
  EXPECT_EQ(p.checks[2].max, 0.0);
  EXPECT_TRUE(p.checks[2].source.empty());
  EXPECT_EQ(p.checks[3].golden, 55.0);
  ASSERT_EQ(t.untrained.size(), 1U);
  EXPECT_EQ(t.untrained[0].check, "d2h");
  EXPECT_EQ(t.untrained[0].why,
            "0 GPU(s) of NVIDIA H100 80GB HBM3 under driver 580.159.04 measured it (needs 5)");
}

TEST(FleetTrain, SpreadIsAtLeastOnePercentOfTheMedian) {
  std::vector<MetricObservation> same;
  same.reserve(6);
  for (int i = 0; i < 6; ++i) {
    same.push_back(seen("GPU-" + std::to_string(i), 50.0));
  }
  Profile p = profile();
  const FleetTraining t = train_from_fleet(p, same, options(2.0));
  ASSERT_FALSE(t.trained.empty());
  EXPECT_DOUBLE_EQ(t.trained[0].spread, 0.5);
  EXPECT_DOUBLE_EQ(*p.checks[0].min, 49.0);
}

TEST(FleetTrain, RanksAreNotMixedAndTooFewGpusTrainNothing) {
  std::vector<MetricObservation> obs;
  obs.reserve(8);
  for (int i = 0; i < 5; ++i) {
    obs.push_back(seen("GPU-a" + std::to_string(i), 300.0, "GB/s", Better::higher, 4));
  }
  for (int i = 0; i < 3; ++i) {
    obs.push_back(seen("GPU-b" + std::to_string(i), 200.0, "GB/s", Better::higher, 2));
  }
  Profile p = profile();
  const FleetTraining t = train_from_fleet(p, obs, options());
  ASSERT_EQ(t.trained.size(), 1U);
  EXPECT_EQ(t.trained[0].ranks, 4);
  EXPECT_DOUBLE_EQ(t.trained[0].median, 300.0);
  EXPECT_NE(p.checks[0].source.find(", 4 ranks at once"), std::string::npos);
  Profile again = profile();
  EXPECT_TRUE(train_from_fleet(again, obs, options(3.0, "", 6)).trained.empty());
}

TEST(FleetTrain, DriversMustBeChosenWhereTheStoreHoldsSeveral) {
  std::vector<MetricObservation> obs = fleet();
  obs.push_back(seen("GPU-0", 60.0, "GB/s", Better::higher, 1, "570.195.03"));
  Profile p = profile();
  EXPECT_THROW((void)train_from_fleet(p, obs, options()), InputError);
  EXPECT_EQ(train_from_fleet(p, obs, options(3.0, "580.159.04")).driver, "580.159.04");
  // The errors name the choice as the caller names it (the command's flag).
  try {
    (void)train_from_fleet(p, obs, options(3.0, "1.0"));
    ADD_FAILURE() << "trained under a driver the store does not hold";
  } catch (const InputError& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "the driver 1.0: the store holds NVIDIA H100 80GB HBM3 results under drivers 570.195.03, 580.159.04 "
        "only");
  }
  Profile q = profile();
  q.gpu = "NVIDIA H200";
  EXPECT_THROW((void)train_from_fleet(q, obs, options()), InputError);
}

TEST(FleetTrain, TheSourceSurvivesTheProfileWrittenAndReadAgain) {
  Profile p = profile();
  (void)train_from_fleet(p, fleet(), options());
  const Profile back = parse_profile(to_yaml(p), "trained.yaml", "--train");
  EXPECT_EQ(back.checks[0].source, p.checks[0].source);
  EXPECT_EQ(back.checks[0].min, p.checks[0].min);
}

}  // namespace
}  // namespace memstress::db
