// The `transfers`, `inplace` and `dataloader`/`streams` declarations: which combinations are cases, and
// that GPU-only workloads are skipped with the reason on the simulated device (never passed).

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "harness/run/plan.hpp"
#include "suites/registry.hpp"
#include "workload_run.hpp"

namespace memstress {
namespace {

using testing::labels;
using testing::SimWorkloadRun;
using testing::spec;

constexpr std::uint64_t kGiB = 1ULL << 30;

TEST(TransfersPlan, D2dIsOneCaseAndPageableMemoryIsNeverCopiedByAKernel) {
  const Registry registry = suites::builtin_registry();
  PlanRequest request;
  request.workloads = {"transfers"};
  request.overrides = {ParamOverride::parse("host=pinned,pageable,registered", "-p"),
                       ParamOverride::parse("engine=ce,sm", "-p"), ParamOverride::parse("bytes=1M", "-p")};
  const auto cases = labels(plan_cases(registry, request));
  // h2d, d2h, bidir: 3 hosts x 2 engines less pageable+sm = 5 each; d2d: 2 engines, host ignored.
  EXPECT_EQ(cases.size(), 3U * 5U + 2U);
  for (const std::string& c : cases) {
    EXPECT_EQ(c.find("host=pageable engine=sm"), std::string::npos) << c;
    if (c.find("direction=d2d") != std::string::npos) {
      EXPECT_NE(c.find("host=pinned"), std::string::npos) << c;
    }
  }
}

TEST(GpuOnlyWorkloads, AreSkippedWithTheReasonOnTheSimulatedDevice) {
  for (const char* name : {"transfers", "inplace", "collectives", "p2p"}) {
    SimWorkloadRun run(name, 8 * kGiB, spec("caching"));
    const auto& rows = run.run({});
    ASSERT_FALSE(rows.empty()) << name;
    for (const Row& row : rows) {
      EXPECT_EQ(row.verdict, Verdict::skip) << name;
      EXPECT_NE(row.reason.find("needs a real GPU"), std::string::npos) << row.reason;
    }
  }
}

}  // namespace
}  // namespace memstress
