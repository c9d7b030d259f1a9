#include <gtest/gtest.h>

#include "apps/flag_names.hpp"
#include "fake_workload.hpp"
#include "harness/core/error.hpp"
#include "harness/core/units.hpp"
#include "harness/run/plan.hpp"
#include "harness/run/registry.hpp"
#include "suites/registry.hpp"

namespace memstress {
namespace {

// The sweep's and the plan's inputs named as `memstress run` names them (apps/flag_names.hpp).
const SizeSweepNames kSweepFlags = app::run_sweep_names();
const PlanInputNames kRunNames = app::run_plan_names();

using testing::fake_workload;

Registry make_registry() {
  Registry r;
  const auto nothing = [](CaseContext&) {};
  r.add(fake_workload(
      "copy",
      std::vector<ParamSpec>{
          {.name = "bytes",
           .type = ParamType::bytes,
           .defaults = {"1M", "4M"},
           .full_defaults = {"1M", "4M", "16M"},
           .minimum = 1,
           .help = ""},
          {.name = "streams", .type = ParamType::integer, .defaults = {"1"}, .minimum = 1, .help = ""}},
      nothing));
  r.add(fake_workload(
      "churn",
      std::vector<ParamSpec>{
          {.name = "ops", .type = ParamType::integer, .defaults = {"100"}, .minimum = 1, .help = ""}},
      nothing));
  r.add(fake_workload("long", std::vector<ParamSpec>{}, nothing, Requirements{}, false));
  return r;
}

std::vector<std::string> labels(const std::vector<PlannedCase>& cases) {
  std::vector<std::string> out;
  for (const auto& c : cases) {
    std::string label(c.workload->name());
    for (const auto& [k, v] : c.params.values()) {
      label += " " + k + "=" + v;
    }
    out.push_back(label);
  }
  return out;
}

TEST(Plan, DefaultJobIsEveryDefaultWorkloadWithDefaults) {
  const Registry r = make_registry();
  EXPECT_EQ(
      labels(plan_cases(r, {})),
      (std::vector<std::string>{"copy bytes=1M streams=1", "copy bytes=4M streams=1", "churn ops=100"}));
}

TEST(Plan, FullUsesLongAxes) {
  const Registry r = make_registry();
  PlanRequest req;
  req.workloads = {"copy"};
  req.full = true;
  EXPECT_EQ(plan_cases(r, req).size(), 3U);
}

TEST(Plan, OverridesMakeCartesianProductInAxisOrder) {
  const Registry r = make_registry();
  PlanRequest req;
  req.workloads = {"copy"};
  req.overrides = {ParamOverride::parse("streams=1,2", "-p"), ParamOverride::parse("bytes=8M", "-p")};
  EXPECT_EQ(labels(plan_cases(r, req)),
            (std::vector<std::string>{"copy bytes=8M streams=1", "copy bytes=8M streams=2"}));
}

TEST(Plan, ScopedOverrideWinsAndDuplicatesCollapse) {
  const Registry r = make_registry();
  PlanRequest req;
  req.workloads = {"copy", "copy"};
  req.overrides = {ParamOverride::parse("copy.streams=4", "-p"), ParamOverride::parse("streams=2", "-p"),
                   ParamOverride::parse("bytes=1M,1048576", "-p")};
  EXPECT_EQ(labels(plan_cases(r, req)), (std::vector<std::string>{"copy bytes=1M streams=4"}));
}

TEST(Plan, SizeSweepReplacesBytesAxis) {
  const Registry r = make_registry();
  PlanRequest req;
  req.workloads = {"copy"};
  req.sizes = std::vector<std::uint64_t>{1024, 2048};
  EXPECT_EQ(labels(plan_cases(r, req)),
            (std::vector<std::string>{"copy bytes=1K streams=1", "copy bytes=2K streams=1"}));
  // -b 1000 -e 8G -f 1.5 reaches 1478277: it was "1.41M", refused as no whole number of bytes
  req.sizes = size_sweep(1000, 2'000'000, 1.5, 0, kSweepFlags);
  const std::vector<PlannedCase> cases = plan_cases(r, req);
  ASSERT_EQ(cases.size(), req.sizes->size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(cases[i].params.bytes("bytes"), (*req.sizes)[i]) << cases[i].params.text("bytes");
  }
}

TEST(Plan, BadInputIsRejectedBeforeAnythingRuns) {
  const Registry r = make_registry();
  const auto rejects = [&](PlanRequest req, const std::string& needle) {
    req.names = kRunNames;
    try {
      static_cast<void>(plan_cases(r, req));
      ADD_FAILURE() << "accepted; expected an error mentioning " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  rejects(PlanRequest{{"nosuch"}, {}, {}, false, {}}, "unknown workload 'nosuch'");
  rejects(PlanRequest{{"churn"}, {ParamOverride::parse("streams=2", "-p")}, {}, false, {}},
          "no selected workload");
  rejects(PlanRequest{{"churn"}, {ParamOverride::parse("copy.streams=2", "-p")}, {}, false, {}},
          "not selected");
  rejects(PlanRequest{{"copy"}, {ParamOverride::parse("streams=x", "-p")}, {}, false, {}}, "-p copy.streams");
  rejects(PlanRequest{{"churn"}, {}, std::vector<std::uint64_t>{1024}, false, {}}, "bytes");
  rejects(PlanRequest{{"copy"}, {}, {}, false, {"churn"}},
          "--in-turn churn: not a workload this run selects");
}

// Found by fuzz/params.cpp (fuzz/regressions/params/): the plan was listed in full before --max-cases was
// looked at, and each axis's values were computed again for every case before it, deduplicated by a search
// of the list: `-b 4K -e 64K -i 4` (15,361 sizes) took 20 s to refuse, and a few axes of a hundred values
// each would take more memory than there is.
TEST(Plan, APlanAboveMaxCasesIsRefusedBeforeItIsListed) {
  const Registry r = make_registry();
  const auto values = [](int n) {
    std::string text;
    for (int i = 1; i <= n; ++i) {
      text += (i > 1 ? "," : "") + std::to_string(i);
    }
    return text;
  };
  PlanRequest req;
  req.workloads = {"copy"};
  req.names = kRunNames;
  req.overrides = {ParamOverride::parse("bytes=" + values(100), "-p"),
                   ParamOverride::parse("streams=" + values(100), "-p")};
  req.max_cases = 10'000;
  EXPECT_EQ(plan_cases(r, req).size(), 10'000U);
  req.max_cases = 9'999;
  try {
    static_cast<void>(plan_cases(r, req));
    ADD_FAILURE() << "a plan of 10,000 cases passed --max-cases 9999";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("more than --max-cases 9999"), std::string::npos) << e.what();
  }
  // 10^10 combinations: refused at once, by their count
  req.max_cases = kDefaultMaxCases;
  req.overrides = {ParamOverride::parse("bytes=" + values(100'000), "-p"),
                   ParamOverride::parse("streams=" + values(100'000), "-p")};
  EXPECT_THROW(static_cast<void>(plan_cases(r, req)), InputError);
}

TEST(Plan, InTurnMarksTheCasesOfItsWorkloadsOnly) {
  const Registry r = make_registry();
  PlanRequest req;
  req.workloads = {"copy", "churn"};
  req.in_turn = {"copy"};
  const std::vector<PlannedCase> cases = plan_cases(r, req);
  ASSERT_FALSE(cases.empty());
  for (const PlannedCase& c : cases) {
    EXPECT_EQ(c.in_turn, c.workload->name() == "copy") << c.workload->name();
  }
}

TEST(Plan, InTurnRefusesAWorkloadWhoseRanksWorkTogether) {
  PlanRequest req;
  req.names = kRunNames;
  req.workloads = {"collectives"};
  req.in_turn = {"collectives"};
  try {
    static_cast<void>(plan_cases(suites::builtin_registry(), req));
    ADD_FAILURE() << "accepted --in-turn collectives";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--in-turn collectives: its ranks work together (NCCL)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Registry, RejectsDuplicatesAndListsKnownNames) {
  Registry r = make_registry();
  EXPECT_THROW(r.add(fake_workload("copy", std::vector<ParamSpec>{}, [](CaseContext&) {})), std::logic_error);
  try {
    static_cast<void>(r.get("nope"));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("copy, churn, long"), std::string::npos) << e.what();
  }
}

// Note [A workload in one place]: a definition without what every workload has, or with an axis named twice,
// is a programming error.
TEST(Registry, RefusesADefinitionThatIsNotWhole) {
  const auto nothing = [](CaseContext&) {};
  Registry r;
  WorkloadDef unnamed = fake_workload("", std::vector<ParamSpec>{}, nothing);
  EXPECT_THROW(r.add(std::move(unnamed)), std::logic_error);
  WorkloadDef no_prepare = fake_workload("idle", std::vector<ParamSpec>{}, nothing);
  no_prepare.prepare = nullptr;
  EXPECT_THROW(r.add(std::move(no_prepare)), std::logic_error);
  const ParamSpec x{.name = "x", .type = ParamType::integer, .defaults = {"1"}, .minimum = 1, .maximum = 8};
  EXPECT_THROW(r.add(fake_workload("twice", std::vector<ParamSpec>{x, x}, nothing)), std::logic_error);
  EXPECT_TRUE(r.all().empty());
}

}  // namespace
}  // namespace memstress
