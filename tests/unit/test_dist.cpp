// The distributed harness without MPI: launcher detection, SoloWorld, gathering rows through a World,
// reading rows back from JSON, and --inject-fault parsing. (MPI itself: tests/mpi, label mpi.)

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/core/launcher.hpp"
#include "harness/dist/dist_error.hpp"
#include "harness/dist/job.hpp"
#include "harness/dist/rank_setup.hpp"
#include "harness/dist/world.hpp"
#include "harness/memory/backend.hpp"
#include "harness/memory/device_spec.hpp"
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

// Where a rank of a fake world stands: its rank, its rank on its host, the world's size.
struct Place {
  int rank = 0;
  int host_rank = 0;
  int size = 2;
};

// Rank 0 of a two-rank world whose other rank sends `other` (or fails to, with `fails`); or any rank of any
// world
// (`place`), for what asks only where a rank stands (rank_device).
class TwoRankWorld final : public World {
 public:
  explicit TwoRankWorld(std::string other, bool fails = false) : other_(std::move(other)), fails_(fails) {}
  explicit TwoRankWorld(Place place) : fails_(false), place_(place) {}
  [[nodiscard]] int rank() const noexcept override { return place_.rank; }
  [[nodiscard]] int size() const noexcept override { return place_.size; }
  [[nodiscard]] int local_rank() const noexcept override { return place_.host_rank; }
  [[nodiscard]] int local_size() const noexcept override { return place_.size; }
  [[nodiscard]] const std::string& node() const noexcept override { return node_; }
  [[nodiscard]] int host_rank() const noexcept override { return place_.host_rank; }
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
  Place place_;
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
  EXPECT_EQ(rank_device("cuda:3", "--device", world).ordinal, 3);
  EXPECT_EQ(rank_device("sim:8G", "--device", world).kind, DeviceSpec::Kind::sim);
  EXPECT_EQ(rank_device("cuda", "--device", world).ordinal, world.local_rank());
  EXPECT_THROW(static_cast<void>(rank_device("gpu7", "--device", world)), InputError);
}

// Under Slurm's --gpus-per-task=1 (or a per-rank CUDA_VISIBLE_DEVICES) every rank sees one GPU, its own, as
// cuda:0: rank 1 drives it rather than refusing to start (Note [A GPU for each rank]).
TEST(RankSetup, ARankThatSeesOneGpuDrivesIt) {
  const TwoRankWorld second(Place{1, 1, 2});
  for (const char* flag : {"auto", "cuda"}) {
    const DeviceSpec spec = rank_device(flag, "--device", second, 1);
    EXPECT_EQ(spec.ordinal, 0) << flag;
    EXPECT_EQ(spec.kind, DeviceSpec::parse(flag, "--device").kind) << flag;
  }
  EXPECT_EQ(rank_device("cuda", "--device", TwoRankWorld(Place{7, 3, 8}), 1).ordinal, 0);
  // A GPU named, or the simulated device, keeps its meaning whatever the rank sees.
  EXPECT_EQ(rank_device("cuda:3", "--device", second, 1).ordinal, 3);
  EXPECT_EQ(rank_device("sim:8G", "--device", second, 1).kind, DeviceSpec::Kind::sim);
}

TEST(RankSetup, RanksThatSeeEveryGpuTakeTheirHostRanksAndNoneBeyondTheLast) {
  EXPECT_EQ(rank_device("cuda", "--device", TwoRankWorld(Place{1, 1, 2}), 2).ordinal, 1);
  EXPECT_EQ(rank_device("auto", "--device", TwoRankWorld(Place{5, 1, 8}), 4).ordinal,
            1);  // rank 5 is the second on its host
  try {
    static_cast<void>(rank_device("cuda", "--device", TwoRankWorld(Place{2, 2, 3}), 2));
    FAIL() << "expected EnvironmentError";
  } catch (const EnvironmentError& e) {
    EXPECT_STREQ(
        e.what(),
        "--device cuda: rank 2 is rank 2 on this host, which has 2 GPUs: start at most one rank per GPU, "
        "or name one with --device cuda:N");
  }
  // No GPU at all: the rank's ordinal is left to make_backend, which says there is none.
  EXPECT_EQ(rank_device("cuda", "--device", TwoRankWorld(Place{1, 1, 2}), 0).ordinal, 1);
  // A world of one is never renumbered.
  EXPECT_EQ(rank_device("cuda", "--device", SoloWorld(), 4).ordinal, 0);
}

DeviceInfo gpu(std::string uuid) {
  DeviceInfo info;
  info.kind = BackendKind::cuda;
  info.name = "NVIDIA H100 80GB HBM3";
  info.uuid = std::move(uuid);
  return info;
}

nlohmann::json rank_gpu(const std::string& uuid) {
  return {{"uuid", uuid}, {"label", "cuda:0"}, {"node", "vm"}};
}

// Each of two ranks shown the same single GPU (mpirun -np 2 on a host of one GPU) would drive it: refused,
// naming both ranks and the GPU.
TEST(RankSetup, TwoRanksOnOneGpuAreRefusedByItsUuid) {
  TwoRankWorld same(rank_gpu("GPU-aaaa").dump());
  try {
    check_one_rank_per_gpu(same, "auto", "--device", gpu("GPU-aaaa"));
    FAIL() << "expected EnvironmentError";
  } catch (const EnvironmentError& e) {
    EXPECT_STREQ(
        e.what(),
        "--device auto: ranks 0 and 1 both drive GPU GPU-aaaa (cuda:0 on node vm): start at most one "
        "rank per GPU (a rank that sees one GPU drives it: give each rank its own, e.g. srun "
        "--gpus-per-task=1), or name one with --device cuda:N");
  }
  TwoRankWorld other(rank_gpu("GPU-bbbb").dump());
  EXPECT_NO_THROW(check_one_rank_per_gpu(other, "cuda", "--device", gpu("GPU-aaaa")));
  // Named by the user: several ranks on one GPU are asked for, not refused.
  TwoRankWorld named(rank_gpu("GPU-aaaa").dump());
  EXPECT_NO_THROW(check_one_rank_per_gpu(named, "cuda:0", "--device", gpu("GPU-aaaa")));
  // The simulated device has no UUID: every rank has its own.
  const SimBackend sim(8ULL << 30);
  TwoRankWorld simulated(rank_gpu("").dump());
  EXPECT_NO_THROW(check_one_rank_per_gpu(simulated, "auto", "--device", sim.info()));
  TwoRankWorld garbled("{");
  EXPECT_THROW(check_one_rank_per_gpu(garbled, "auto", "--device", gpu("GPU-aaaa")), DistError);
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
