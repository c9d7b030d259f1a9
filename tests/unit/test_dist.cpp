// The distributed harness without MPI: launcher detection, SoloWorld, gathering rows through a World,
// reading rows back from JSON, and --inject-fault parsing. (MPI itself: tests/mpi, label mpi.)

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>

#include "harness/core/error.hpp"
#include "harness/core/launcher.hpp"
#include "harness/dist/dist_error.hpp"
#include "harness/dist/job.hpp"
#include "harness/dist/rank_setup.hpp"
#include "harness/dist/world.hpp"
#include "harness/memory/sim_backend.hpp"
#include "harness/run/case_sync.hpp"
#include "harness/run/fault.hpp"
#include "metric_fixture.hpp"

namespace memstress {
namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(Launcher, DetectsOpenMpiPmixAndPmi) {
  EXPECT_FALSE(launched_by_mpi(env_of({})));
  EXPECT_TRUE(launched_by_mpi(env_of({{"OMPI_COMM_WORLD_SIZE", "2"}})));
  EXPECT_TRUE(launched_by_mpi(env_of({{"PMIX_RANK", "0"}})));
  EXPECT_TRUE(launched_by_mpi(env_of({{"PMI_SIZE", "4"}})));
  EXPECT_EQ(launcher_rank(env_of({})), std::nullopt);
  EXPECT_EQ(launcher_rank(env_of({{"OMPI_COMM_WORLD_RANK", "3"}})), 3);
  EXPECT_EQ(launcher_rank(env_of({{"PMI_RANK", "1"}})), 1);
  EXPECT_EQ(launcher_rank(env_of({{"PMIX_RANK", "x1"}})), std::nullopt);
}

TEST(SoloWorld, IsAWorldOfOneWhoseCollectivesAreTheIdentity) {
  SoloWorld world;
  EXPECT_EQ(world.rank(), 0);
  EXPECT_EQ(world.size(), 1);
  EXPECT_EQ(world.local_rank(), 0);
  EXPECT_EQ(world.local_size(), 1);
  world.barrier();
  EXPECT_EQ(world.all_gather(2.5), std::vector<double>{2.5});
  const std::string long_text(100000, 'x');
  EXPECT_EQ(world.gather(long_text), std::vector<std::string>{long_text});
}

TEST(Job, WithoutMpiIsAWorldOfOneThatKeepsTheTimeout) {
  const Job job(std::chrono::seconds(7), env_of({}));
  EXPECT_FALSE(job.under_mpi());
  EXPECT_EQ(job.world().size(), 1);
  // Workloads bound their waits on NCCL work by it (a communicator of one too).
  EXPECT_EQ(job.world().timeout(), std::chrono::seconds(7));
  EXPECT_EQ(SoloWorld().timeout(), std::chrono::minutes(5));
}

// A body that has said what it had to of a failure (accept's verdict on a run that lost a rank) ends the job
// with its code; in a world of one that is run_as_job's return value.
TEST(Job, ABodyThatEndsTheJobGivesItsCodeInAWorldOfOne) {
  EXPECT_EQ(run_as_job(5, "--timeout", [](World&) -> int { throw EndJob(ExitCode::check_failed); }), 1);
  EXPECT_EQ(run_as_job(5, "--timeout", [](World& world) { return world.size() == 1 ? 0 : 2; }), 0);
}

Row sample_row(int rank) {
  Row row;
  row.workload = "sizes";
  row.params = {{"pattern", "random"}, {"bytes", "1M"}};  // axis order, not alphabetical
  row.allocator = "caching";
  row.rank = rank;
  row.device = DeviceRef{"sim:8G", "sim", 0, "simulated (8G)", "", ""};
  row.verdict = rank == 1 ? Verdict::error : Verdict::pass;
  row.reason = rank == 1 ? "boom" : "";
  row.metrics.push_back(testing::metric_of("alloc", "us", Better::lower, {1.0, 2.0, 3.0}));
  row.checked = 10;
  row.notes = {"a note"};
  row.allocator_stats = {{"allocated_bytes.all.peak", 42}};
  row.started_at = "2026-11-21T20:00:00Z";
  row.seconds = 0.5;
  return row;
}

// Rank 0 of a two-rank world whose other rank sends `other` (or fails to, with `fails`).
class TwoRankWorld final : public World {
 public:
  explicit TwoRankWorld(std::string other, bool fails = false) : other_(std::move(other)), fails_(fails) {}
  [[nodiscard]] int rank() const noexcept override { return 0; }
  [[nodiscard]] int size() const noexcept override { return 2; }
  [[nodiscard]] int local_rank() const noexcept override { return 0; }
  [[nodiscard]] int local_size() const noexcept override { return 2; }
  [[nodiscard]] const std::string& node() const noexcept override { return node_; }
  [[nodiscard]] int host_rank() const noexcept override { return 0; }
  [[nodiscard]] std::chrono::milliseconds timeout() const noexcept override {
    return std::chrono::seconds(1);
  }
  void barrier() override {
    if (fails_) {
      throw DistError("rank 1 did not report within 1 s (failed or hangs)");
    }
  }
  void spin_barrier() override { barrier(); }
  void broadcast(std::span<std::byte> /*bytes*/, int /*root*/) override {}
  [[nodiscard]] std::vector<double> all_gather(double value) override { return {value, value}; }
  [[nodiscard]] std::vector<std::string> gather(const std::string& text) override {
    barrier();
    return {text, other_};
  }

 private:
  std::string other_;
  bool fails_;
  std::string node_ = "node-a";
};

TEST(CaseSync, RowsOfEveryRankReachRankZeroInRankOrderAndReadBack) {
  TwoRankWorld world(nlohmann::json(sample_row(1)).dump());
  const std::vector<Row> rows = gather_rows(world, sample_row(0), "[1/1] sizes");
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_EQ(rows[0].rank, 0);
  EXPECT_EQ(rows[1].rank, 1);
  EXPECT_EQ(rows[1].verdict, Verdict::error);
  EXPECT_EQ(rows[1].reason, "boom");
  // Everything survives the trip, parameters in axis order.
  EXPECT_EQ(rows[1].params, sample_row(1).params);
  EXPECT_EQ(nlohmann::json(rows[1]), nlohmann::json(sample_row(1)));
  EXPECT_EQ(rows[1].metric("alloc")->summary.median, 2.0);
}

TEST(CaseSync, ALateRankIsNamedWithTheCase) {
  TwoRankWorld world("", /*fails=*/true);
  try {
    align_ranks(world, "[2/3] sizes bytes=1M");
    FAIL() << "expected DistError";
  } catch (const DistError& e) {
    EXPECT_STREQ(e.what(),
                 "before case [2/3] sizes bytes=1M: rank 1 did not report within 1 s (failed or hangs)");
  }
  try {
    static_cast<void>(gather_rows(world, sample_row(0), "[2/3] sizes bytes=1M"));
    FAIL() << "expected DistError";
  } catch (const DistError& e) {
    EXPECT_NE(std::string(e.what()).find("case [2/3] sizes bytes=1M: rank 1 did not report"),
              std::string::npos);
    EXPECT_EQ(e.exit_code(), ExitCode::check_failed);
  }
}

TEST(CaseSync, AGarbledRowNamesItsRank) {
  TwoRankWorld world("{not json");
  try {
    static_cast<void>(gather_rows(world, sample_row(0), "[1/1] sizes"));
    FAIL() << "expected DistError";
  } catch (const DistError& e) {
    EXPECT_NE(std::string(e.what()).find("the row of rank 1 does not read back"), std::string::npos);
  }
}

TEST(CaseSync, AWorldOfOneKeepsTheRowAsItIs) {
  SoloWorld world;
  const std::vector<Row> rows = gather_rows(world, sample_row(0), "[1/1] sizes");
  ASSERT_EQ(rows.size(), 1U);
  EXPECT_EQ(rows[0].params, sample_row(0).params);
}

TEST(RankSetup, EveryRanksEnvironmentReachesRankZeroWithItsDevice) {
  const nlohmann::json other = {{"rank", 1}, {"local_rank", 1}, {"host", {{"name", "node2"}}}};
  TwoRankWorld world(other.dump());
  const SimBackend sim(8ULL << 30);
  const nlohmann::json env = gather_environment(world, {{"host", {{"name", "node1"}}}}, sim);
  ASSERT_EQ(env["ranks"].size(), 2U);
  EXPECT_EQ(env["ranks"][0]["rank"], 0);
  EXPECT_EQ(env["ranks"][0]["host"]["name"], "node1");
  EXPECT_EQ(env["ranks"][0]["device"]["label"], sim.info().label());
  EXPECT_EQ(env["ranks"][0]["device"]["pci_bus_id"], "");  // the simulated device has none
  EXPECT_EQ(env["ranks"][1], other);

  TwoRankWorld garbled("{");
  EXPECT_THROW(static_cast<void>(gather_environment(garbled, nlohmann::json::object(), sim)), DistError);
}

TEST(RankSetup, CudaNamedByNumberOrSimKeepTheirMeaningOnEveryRank) {
  TwoRankWorld world("");
  EXPECT_EQ(rank_device("cuda:3", world).ordinal, 3);
  EXPECT_EQ(rank_device("sim:8G", world).kind, DeviceSpec::Kind::sim);
  EXPECT_EQ(rank_device("cuda", world).ordinal, world.local_rank());
  EXPECT_THROW(static_cast<void>(rank_device("gpu7", world)), InputError);
}

TEST(FaultInjection, ParsesRankCaseAndKind) {
  const FaultInjection f = FaultInjection::parse("1:2:hang", "--inject-fault");
  EXPECT_EQ(f.rank, 1);
  EXPECT_EQ(f.case_index, 2U);
  EXPECT_EQ(f.kind, FaultInjection::Kind::hang);
  EXPECT_EQ(FaultInjection::parse("0:0:exit", "--inject-fault").kind, FaultInjection::Kind::exit);
  EXPECT_EQ(FaultInjection::parse("3:10:throw", "--inject-fault").kind, FaultInjection::Kind::raise);
  for (const char* bad : {"", "1", "1:2", "1:2:explode", "-1:0:exit", "a:0:exit", "1:b:exit", "1:2:exit:3"}) {
    EXPECT_THROW(static_cast<void>(FaultInjection::parse(bad, "--inject-fault")), InputError) << bad;
  }
}

TEST(FaultInjection, ThrowsOnlyOnItsRankAndCase) {
  const std::optional<FaultInjection> fault = FaultInjection::parse("1:2:throw", "--inject-fault");
  EXPECT_NO_THROW(maybe_inject(std::nullopt, 1, 2));
  EXPECT_NO_THROW(maybe_inject(fault, 0, 2));
  EXPECT_NO_THROW(maybe_inject(fault, 1, 1));
  EXPECT_THROW(maybe_inject(fault, 1, 2), std::runtime_error);
}

}  // namespace
}  // namespace memstress
