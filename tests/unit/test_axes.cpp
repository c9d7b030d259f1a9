// Note [The axes in one place] (suites/axes.hpp): the fuzz target of the plan plans against the workloads'
// own axes, and what it reads of them besides is what the built-in registry says.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fuzz/plan_registry.hpp"
#include "harness/run/params.hpp"
#include "harness/run/plan.hpp"
#include "harness/run/registry.hpp"
#include "suites/registry.hpp"

namespace memstress {
namespace {

std::vector<std::string> labels(const std::vector<PlannedCase>& cases) {
  std::vector<std::string> out;
  out.reserve(cases.size());
  for (const PlannedCase& c : cases) {
    std::string label(c.workload->name());
    for (const auto& [key, value] : c.params.values()) {
      label.append(" ").append(key).append("=").append(value);
    }
    out.push_back(label);
  }
  return out;
}

TEST(Axes, EachFuzzStandInIsTheBuiltInWorkloadOfItsName) {
  const Registry builtin = suites::builtin_registry();
  const Registry fuzzed = fuzz::plan_registry();
  for (const auto& stand_in : fuzzed.all()) {
    if (stand_in->name() == fuzz::kSignedWorkload) {
      continue;
    }
    const Workload* real = builtin.find(stand_in->name());
    ASSERT_NE(real, nullptr) << stand_in->name();
    EXPECT_EQ(stand_in->requirements().all_ranks, real->requirements().all_ranks) << stand_in->name();
    EXPECT_EQ(stand_in->in_default_job(), real->in_default_job()) << stand_in->name();
    const std::vector<ParamSpec>& mine = stand_in->params();
    const std::vector<ParamSpec>& theirs = real->params();
    ASSERT_EQ(mine.size(), theirs.size()) << stand_in->name();
    for (std::size_t i = 0; i < mine.size(); ++i) {
      EXPECT_EQ(mine[i].name, theirs[i].name);
      EXPECT_EQ(mine[i].type, theirs[i].type) << mine[i].name;
      EXPECT_EQ(mine[i].defaults, theirs[i].defaults) << mine[i].name;
      EXPECT_EQ(mine[i].full_defaults, theirs[i].full_defaults) << mine[i].name;
      EXPECT_EQ(mine[i].choices, theirs[i].choices) << mine[i].name;
      EXPECT_EQ(mine[i].minimum, theirs[i].minimum) << mine[i].name;
      EXPECT_EQ(mine[i].maximum, theirs[i].maximum) << mine[i].name;
    }
  }
}

// transfers' rule of which combinations are cases is the built-in one: the --full plans agree case for case.
TEST(Axes, TheFuzzStandInPlansTransfersAsTheBuiltInOne) {
  PlanRequest request;
  request.workloads = {"transfers"};
  request.full = true;
  EXPECT_EQ(labels(plan_cases(fuzz::plan_registry(), request)),
            labels(plan_cases(suites::builtin_registry(), request)));
}

}  // namespace
}  // namespace memstress
