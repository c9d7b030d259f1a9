// The fragmentation workload through the Runner on the simulated device, with the allocators the factory
// builds: every pattern passes with its metrics, and the figures PyTorch users know come out.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "harness/alloc/factory.hpp"
#include "harness/memory/sim_backend.hpp"
#include "harness/results/sink.hpp"
#include "harness/run/registry.hpp"
#include "harness/run/runner.hpp"
#include "suites/registry.hpp"
#include "workload_run.hpp"

namespace memstress {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;
constexpr std::uint64_t kGiB = 1ULL << 30;

using testing::median;
using testing::spec;

// One simulated device, one allocator from the factory, one run of `fragmentation`.
struct FragmentationRun : testing::SimWorkloadRun {
  FragmentationRun(std::uint64_t capacity, const AllocatorSpec& spec)
      : SimWorkloadRun("fragmentation", capacity, spec) {}
};

class EveryPattern : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryPattern, PassesWithMetricsAndVerifiedBlocks) {
  FragmentationRun f(8 * kGiB, spec(GetParam()));
  const auto& rows = f.run({});
  EXPECT_EQ(f.failures, 0);
  ASSERT_EQ(rows.size(), 5U);  // every pattern at the default scale
  for (const Row& row : rows) {
    SCOPED_TRACE(row.case_label());
    EXPECT_EQ(row.verdict, Verdict::pass) << row.reason;
    EXPECT_GT(row.checked, 0U);  // placement checks of every block
    EXPECT_EQ(row.errors, 0U);
    EXPECT_GT(median(row, "steps"), 0);
    EXPECT_GT(median(row, "peak_allocated"), 0);
    EXPECT_GE(median(row, "peak_reserved"), median(row, "peak_allocated"));
    EXPECT_GT(median(row, "utilization"), 0);
    EXPECT_LE(median(row, "utilization"), 1);
    EXPECT_GE(median(row, "reserved_minus_allocated"), 0);
    EXPECT_GT(median(row, "largest_allocatable"), 0);
    // One search per case (max_repetitions), whatever the run asks for.
    EXPECT_EQ(row.metric("peak_reserved")->samples.size(), 1U);
  }
  EXPECT_EQ(f.stat("allocated_bytes.all.current"), 0);
}

INSTANTIATE_TEST_SUITE_P(Allocators, EveryPattern, ::testing::Values("caching", "expandable", "direct"));

TEST(FragmentationWorkload, Classic16x8Then32x4ReservesTwiceTheDataOnTheCachingAllocator) {
  FragmentationRun caching(8 * kGiB, spec("caching"));
  const Row& c = caching.run({"pattern=16x8_32x4", "scale=16M"}).at(0);
  EXPECT_EQ(c.verdict, Verdict::pass) << c.reason;
  EXPECT_EQ(median(c, "peak_allocated"), static_cast<double>(128 * kMiB));
  EXPECT_EQ(median(c, "peak_reserved"), static_cast<double>(256 * kMiB));  // as PyTorch
  EXPECT_DOUBLE_EQ(median(c, "utilization"), 0.5);

  FragmentationRun expandable(8 * kGiB, spec("expandable"));
  const Row& e = expandable.run({"pattern=16x8_32x4", "scale=16M"}).at(0);
  EXPECT_EQ(e.verdict, Verdict::pass) << e.reason;
  EXPECT_LT(median(e, "peak_reserved"), static_cast<double>(256 * kMiB));
  EXPECT_GT(median(e, "utilization"), 0.5);
}

TEST(FragmentationWorkload, SplitLargeLeavesInactiveSplitBytesThatNoRequestCanUse) {
  FragmentationRun f(8 * kGiB, spec("caching"));
  const Row& row = f.run({"pattern=split_large", "scale=16M"}).at(0);
  EXPECT_EQ(row.verdict, Verdict::pass) << row.reason;
  // 128 MiB carved into 8 x (2 MiB live, 14 MiB freed); the 64 MiB request gets a segment of its own.
  EXPECT_EQ(median(row, "inactive_split_bytes"), static_cast<double>(112 * kMiB));
  EXPECT_EQ(median(row, "peak_reserved"), static_cast<double>(192 * kMiB));
  EXPECT_EQ(median(row, "reserved_minus_allocated"), static_cast<double>(112 * kMiB));
  // Only the device's free memory can hold one block: the 112 MiB are in 14 MiB pieces.
  EXPECT_EQ(median(row, "largest_allocatable"), static_cast<double>(8 * kGiB - 192 * kMiB));
  ASSERT_NE(row.metric("external_fragmentation"), nullptr);
  EXPECT_GT(median(row, "external_fragmentation"), 0.8);  // 1 - 14/112
}

TEST(FragmentationWorkload, TheDirectAllocatorReservesExactlyWhatIsAllocated) {
  FragmentationRun f(8 * kGiB, spec("direct"));
  for (const Row& row : f.run({"pattern=interleaved,kv_cache"})) {
    EXPECT_EQ(row.verdict, Verdict::pass) << row.reason;
    EXPECT_DOUBLE_EQ(median(row, "utilization"), 1.0);
    EXPECT_EQ(median(row, "reserved_minus_allocated"), 0);
  }
}

TEST(FragmentationWorkload, InterleavedLifetimesFragmentTheCachingAllocator) {
  FragmentationRun f(8 * kGiB, spec("caching"));
  const Row& row = f.run({"pattern=interleaved", "scale=64M"}).at(0);
  EXPECT_EQ(row.verdict, Verdict::pass) << row.reason;
  EXPECT_LT(median(row, "utilization"), 0.7);  // the freed 64 MiB holes fit no 72 MiB request
  EXPECT_GE(median(row, "reserved_minus_allocated"), static_cast<double>(512 * kMiB));
}

TEST(FragmentationWorkload, RepetitionsAreIndependent) {
  FragmentationRun f(8 * kGiB, spec("caching"));
  for (const Row& row : f.run({"pattern=growing_seq,kv_cache"}, 3)) {
    const MetricResult* reserved = row.metric("peak_reserved");
    ASSERT_NE(reserved, nullptr);
    EXPECT_EQ(reserved->summary.min, reserved->summary.max) << row.case_label();
  }
}

TEST(FragmentationWorkload, TheScaleIsLoweredToFitHalfOfASmallDevice) {
  FragmentationRun f(512 * kMiB, spec("caching"));
  const auto& rows = f.run({"scale=256M"});
  EXPECT_EQ(f.failures, 0);
  for (const Row& row : rows) {
    EXPECT_EQ(row.verdict, Verdict::pass) << row.case_label() << ": " << row.reason;
    ASSERT_FALSE(row.notes.empty()) << row.case_label();
    EXPECT_NE(row.notes[0].find("lowered"), std::string::npos) << row.notes[0];
    EXPECT_LE(median(row, "peak_reserved"), static_cast<double>(256 * kMiB)) << row.case_label();
  }
}

TEST(FragmentationWorkload, AnInterruptedCaseFreesWhatItHeld) {
  AllocatorSpec limited = spec("caching");
  limited.limit = 100 * kMiB;  // the pattern needs 128 MiB live
  FragmentationRun f(8 * kGiB, limited);
  const Row& row = f.run({"pattern=16x8_32x4", "scale=16M"}).at(0);
  EXPECT_EQ(row.verdict, Verdict::error);
  EXPECT_NE(row.reason.find("out of memory"), std::string::npos) << row.reason;
  EXPECT_EQ(f.stat("allocated_bytes.all.current"), 0);
}

}  // namespace
}  // namespace memstress
