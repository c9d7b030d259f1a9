// The p2p workload on the CPU: its cases (latency only as SM reads in one direction), the pointer chase's
// arithmetic (a full cycle through every slot); the skip on the simulated device is tested with transfers.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "harness/run/plan.hpp"
#include "kernels/chase.hpp"
#include "suites/registry.hpp"
#include "workload_run.hpp"

namespace memstress {
namespace {

TEST(Chase, TheChainVisitsEverySlotOnceBeforeItCloses) {
  for (const std::uint64_t slots : {1ULL, 2ULL, 64ULL, 1024ULL, 1ULL << 16U}) {
    std::vector<bool> seen(slots, false);
    std::uint64_t k = 0;
    for (std::uint64_t i = 0; i < slots; ++i) {
      ASSERT_FALSE(seen[k]) << "slot " << k << " twice in a chain of " << slots;
      seen[k] = true;
      k = kernels::chase_next(k, slots);
    }
    EXPECT_EQ(k, 0U) << slots;  // back at the start after exactly `slots` hops
  }
  EXPECT_EQ(kernels::chase_slot_after(1024, 1024), 0U);
  EXPECT_EQ(kernels::chase_slot_after(1, 1024), kernels::chase_next(0, 1024));
}

TEST(Chase, SlotsAreThePowerOfTwoThatFits) {
  EXPECT_EQ(kernels::chase_slots(100), 0U);
  EXPECT_EQ(kernels::chase_slots(256), 1U);
  EXPECT_EQ(kernels::chase_slots(1000), 2U);
  EXPECT_EQ(kernels::chase_slots(256ULL << 20U), 1ULL << 20U);
}

std::vector<std::string> p2p_cases(bool full) {
  PlanRequest request;
  request.workloads = {"p2p"};
  request.full = full;
  const Registry registry = suites::builtin_registry();
  return testing::labels(plan_cases(registry, request));
}

TEST(P2pPlan, LatencyIsOneCasePerSizeOfSmReadsInOneDirection) {
  const auto quick = p2p_cases(false);
  EXPECT_EQ(quick.size(), 2U * 2U * 2U + 1U);  // engine x access x direction, and the chase
  int latency = 0;
  for (const std::string& c : quick) {
    if (c.find("measure=latency") != std::string::npos) {
      ++latency;
      EXPECT_EQ(c, "measure=latency engine=sm access=read direction=uni bytes=256M");
    }
  }
  EXPECT_EQ(latency, 1);
  EXPECT_EQ(p2p_cases(true).size(), (8U + 1U) * 4U);
}

TEST(P2pPlan, TheDefaultJobHasEightBandwidthCasesAndOneLatency) {
  const Registry registry = suites::builtin_registry();  // the cases point into it
  std::size_t p2p = 0;
  for (const PlannedCase& c : plan_cases(registry, PlanRequest{})) {
    p2p += std::string(c.workload->name()) == "p2p" ? 1U : 0U;
  }
  EXPECT_EQ(p2p, 9U);
}

}  // namespace
}  // namespace memstress
