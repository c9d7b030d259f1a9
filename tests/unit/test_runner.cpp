#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "fake_workload.hpp"
#include "harness/alloc/direct_allocator.hpp"
#include "harness/core/error.hpp"
#include "harness/dist/world.hpp"
#include "harness/memory/sim_backend.hpp"
#include "harness/results/sink.hpp"
#include "harness/run/registry.hpp"
#include "harness/run/runner.hpp"

namespace memstress {
namespace {

using testing::fake_workload;

struct Fixture {
  SimBackend device{1ULL << 30};
  DirectAllocator allocator{device};
  ResultSink sink{RunRecord{}, std::nullopt, ""};
};

std::vector<PlannedCase> cases_of(const Registry& r) {
  return plan_cases(r, {});
}

TEST(Runner, WarmupIsNotMeasuredAndStatsAreSummarized) {
  Registry r;
  r.add(fake_workload("count", std::vector<ParamSpec>{}, [](CaseContext& ctx) {
    ctx.record("iteration", "count", Better::none, ctx.iteration());
    ctx.verified(10, 0);
  }));
  Fixture f;
  RunOptions opt;
  opt.warmup = 2;
  opt.repetitions = 3;
  opt.quiet = true;
  EXPECT_EQ(Runner(f.allocator, opt).run(cases_of(r), f.sink), 0);
  const Row row = f.sink.full_rows().at(0);
  EXPECT_EQ(row.verdict, Verdict::pass);
  ASSERT_EQ(row.metrics.size(), 1U);
  EXPECT_EQ(row.metrics[0].samples, (std::vector<double>{2, 3, 4}));
  EXPECT_DOUBLE_EQ(row.metrics[0].summary.median, 3);
  EXPECT_EQ(row.checked, 50U);  // warm-up checks count too
  EXPECT_EQ(row.device.label, "sim:1G");
  EXPECT_EQ(row.allocator, "direct");
}

// Each row names its headline metric: the first of its workload's headline that the case recorded, else the
// first it recorded; a row without metrics names none.
TEST(Runner, EachRowNamesItsHeadlineMetric) {
  const auto record_a_then_b = [](CaseContext& ctx) {
    ctx.record("a", "count", Better::none, 1);
    ctx.record("b", "count", Better::none, 2);
  };
  Registry r;
  WorkloadDef preferred = fake_workload("preferred", std::vector<ParamSpec>{}, record_a_then_b);
  preferred.headline = {"nosuch", "b"};
  r.add(std::move(preferred));
  WorkloadDef missing = fake_workload("missing", std::vector<ParamSpec>{}, record_a_then_b);
  missing.headline = {"nosuch"};
  r.add(std::move(missing));
  r.add(fake_workload("nothing", std::vector<ParamSpec>{}, [](CaseContext&) {}));
  Fixture f;
  RunOptions opt;
  opt.quiet = true;
  EXPECT_EQ(Runner(f.allocator, opt).run(cases_of(r), f.sink), 0);
  const std::vector<Row> rows = f.sink.full_rows();
  ASSERT_EQ(rows.size(), 3U);
  EXPECT_EQ(rows[0].headline, "b");
  EXPECT_EQ(rows[1].headline, "a");
  EXPECT_EQ(rows[2].headline, "");
}

TEST(Runner, DataErrorsFailTheCase) {
  Registry r;
  r.add(fake_workload("bad", std::vector<ParamSpec>{}, [](CaseContext& ctx) { ctx.verified(100, 1); }));
  Fixture f;
  RunOptions opt;
  opt.quiet = true;
  EXPECT_EQ(Runner(f.allocator, opt).run(cases_of(r), f.sink), 1);
  EXPECT_EQ(f.sink.full_rows()[0].verdict, Verdict::fail);
  EXPECT_NE(f.sink.full_rows()[0].reason.find("wrong"), std::string::npos);
}

TEST(Runner, ExceptionsBecomeErrorRowsAndTheRunGoesOn) {
  Registry r;
  r.add(fake_workload("oom", std::vector<ParamSpec>{}, [](CaseContext& ctx) {
    static_cast<void>(ctx.allocator().allocate(2ULL << 30));  // more than the device has
  }));
  r.add(fake_workload("fine", std::vector<ParamSpec>{}, [](CaseContext& ctx) { ctx.verified(1, 0); }));
  Fixture f;
  RunOptions opt;
  opt.quiet = true;
  EXPECT_EQ(Runner(f.allocator, opt).run(cases_of(r), f.sink), 1);
  const std::vector<Row> rows = f.sink.full_rows();
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_EQ(rows[0].verdict, Verdict::error);
  EXPECT_NE(rows[0].reason.find("out of memory"), std::string::npos) << rows[0].reason;
  EXPECT_EQ(rows[0].allocator_stats.at("num_ooms"), 1);
  EXPECT_EQ(rows[1].verdict, Verdict::pass);
}

TEST(Runner, RealGpuWorkloadsAreSkippedWithAReasonOnTheSimulatedDevice) {
  Registry r;
  r.add(fake_workload(
      "gpu-only", std::vector<ParamSpec>{}, [](CaseContext&) { FAIL() << "must not run"; },
      Requirements{.real_gpu = true}));
  r.add(fake_workload(
      "two-ranks", std::vector<ParamSpec>{}, [](CaseContext&) { FAIL() << "must not run"; },
      Requirements{.min_ranks = 2}));
  Fixture f;
  RunOptions opt;
  opt.quiet = true;
  EXPECT_EQ(Runner(f.allocator, opt).run(cases_of(r), f.sink), 0);
  const std::vector<Row> rows = f.sink.full_rows();
  EXPECT_EQ(rows[0].verdict, Verdict::skip);
  EXPECT_EQ(rows[0].reason, "needs a real GPU (running on the simulated device sim:1G)");
  EXPECT_EQ(rows[1].verdict, Verdict::skip);
  EXPECT_EQ(rows[1].reason, "needs 2 ranks (running with 1)");
}

TEST(Runner, ACaseThatFindsAtRunTimeThatItCannotRunIsSkippedNotFailed) {
  Registry r;
  r.add(fake_workload("not-here", std::vector<ParamSpec>{},
                      [](CaseContext&) { throw SkipCase("measured by local rank 0 alone"); }));
  Fixture f;
  RunOptions opt;
  opt.quiet = true;
  EXPECT_EQ(Runner(f.allocator, opt).run(cases_of(r), f.sink), 0);
  const Row row = f.sink.full_rows().at(0);
  EXPECT_EQ(row.verdict, Verdict::skip);
  EXPECT_EQ(row.reason, "measured by local rank 0 alone");
}

TEST(Runner, CaseSeedsAreStableAndDistinct) {
  Registry r;
  r.add(fake_workload(
      "w",
      std::vector<ParamSpec>{{.name = "x", .type = ParamType::integer, .defaults = {"1", "2"}, .help = ""}},
      [](CaseContext&) {}));
  const auto cases = cases_of(r);
  EXPECT_EQ(case_seed(7, cases[0]), case_seed(7, cases[0]));
  EXPECT_NE(case_seed(7, cases[0]), case_seed(7, cases[1]));
  EXPECT_NE(case_seed(7, cases[0]), case_seed(8, cases[0]));
}

TEST(Runner, UnitMismatchIsAProgrammingError) {
  Registry r;
  r.add(fake_workload("w", std::vector<ParamSpec>{}, [](CaseContext& ctx) {
    ctx.record("t", "us", Better::lower, 1);
    ctx.record("t", "ms", Better::lower, 1);
  }));
  Fixture f;
  RunOptions opt;
  opt.quiet = true;
  opt.warmup = 0;
  EXPECT_EQ(Runner(f.allocator, opt).run(cases_of(r), f.sink), 1);
  EXPECT_NE(f.sink.full_rows()[0].reason.find("recorded with unit"), std::string::npos);
}

// Rank 1 of four: local rank 1 of a node of two (node a: ranks 0 and 1; node b: ranks 2 and 3). Counts the
// barriers; every other rank's part is taken as done.
class SecondRankOfANodeOfTwo final : public World {
 public:
  [[nodiscard]] int rank() const noexcept override { return 1; }
  [[nodiscard]] int size() const noexcept override { return 4; }
  [[nodiscard]] int local_rank() const noexcept override { return 1; }
  [[nodiscard]] int local_size() const noexcept override { return 2; }
  [[nodiscard]] const std::string& node() const noexcept override { return node_; }
  [[nodiscard]] int host_rank() const noexcept override { return 1; }
  [[nodiscard]] std::chrono::milliseconds timeout() const noexcept override {
    return std::chrono::seconds(1);
  }
  void barrier() override { ++barriers; }
  void spin_barrier() override { ++barriers; }
  void broadcast(std::span<std::byte> /*bytes*/, int /*root*/) override {}
  [[nodiscard]] std::vector<double> all_gather(double value) override {
    return std::vector<double>(4, value);
  }
  [[nodiscard]] std::vector<std::string> gather(const std::string& /*text*/) override { return {}; }
  int barriers = 0;

 private:
  std::string node_ = "a";
};

TEST(Runner, InTurnTakesOneTurnPerLocalRankAndRunsInItsOwn) {
  // Note [Turns by local rank]: two turns (the nodes have two ranks each), not four (one per rank); local
  // rank 1 runs in the second, after the barrier that ends the first.
  Registry r;
  SecondRankOfANodeOfTwo world;
  int barriers_before_running = -1;
  r.add(fake_workload("count", std::vector<ParamSpec>{}, [&](CaseContext& ctx) {
    barriers_before_running = world.barriers;
    ctx.record("n", "count", Better::none, 1);
  }));
  PlanRequest request;
  request.in_turn = {"count"};
  const std::vector<PlannedCase> cases = plan_cases(r, request);
  ASSERT_EQ(cases.size(), 1U);
  ASSERT_TRUE(cases[0].in_turn);
  Fixture f;
  RunOptions opt;
  opt.quiet = true;
  opt.world = &world;
  EXPECT_EQ(Runner(f.allocator, opt).run(cases, f.sink), 0);
  EXPECT_EQ(barriers_before_running, 2);  // the case's alignment, then the end of turn 0
  EXPECT_EQ(world.barriers, 3);           // and the end of turn 1: two turns
}

}  // namespace
}  // namespace memstress
