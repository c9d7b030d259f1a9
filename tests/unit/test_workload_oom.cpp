// The oom workload through the Runner on the simulated device, and its searches on their own: the largest
// single allocation reaches the whole simulated device, the batch search agrees with a linear scan, a
// fragmented allocator never fits a larger batch, and OOMs are counted, never errors.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "harness/alloc/adaptors.hpp"
#include "harness/alloc/factory.hpp"
#include "harness/core/error.hpp"
#include "harness/memory/sim_backend.hpp"
#include "harness/results/sink.hpp"
#include "harness/run/registry.hpp"
#include "harness/run/runner.hpp"
#include "suites/registry.hpp"
#include "suites/support/live_blocks.hpp"
#include "suites/support/oom_search.hpp"
#include "workload_run.hpp"

namespace memstress {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;
constexpr std::uint64_t kGiB = 1ULL << 30;

using testing::median;
using testing::spec;

// One simulated device, one allocator from the factory, one run of `oom`.
struct OomRun : testing::SimWorkloadRun {
  OomRun(std::uint64_t capacity, const AllocatorSpec& spec) : SimWorkloadRun("oom", capacity, spec) {}
};

const Row& find(const std::vector<Row>& rows, std::string_view search, std::string_view state) {
  for (const Row& row : rows) {
    if (row.params.at(0).second == search && row.params.at(1).second == state) {
      return row;
    }
  }
  throw std::out_of_range("no such row");
}

TEST(OomWorkload, LargestSingleFindsTheWholeSimulatedDevice) {
  OomRun f(8 * kGiB, spec("caching"));
  const Row& row = f.run({"search=largest_single", "state=fresh"}).at(0);
  EXPECT_EQ(row.verdict, Verdict::pass) << row.reason;
  EXPECT_GE(median(row, "ratio"), 0.999);  // the simulated device has no context overhead
  EXPECT_GE(median(row, "largest_allocatable"), 0.999 * static_cast<double>(8 * kGiB));
  EXPECT_GE(median(row, "probes"), 1);  // from the free memory: the answer is right there
  EXPECT_LE(median(row, "probes"), 4);
  EXPECT_GE(median(row, "search_time"), 0);
  EXPECT_GT(row.checked, 0U);
  EXPECT_EQ(row.errors, 0U);
  EXPECT_EQ(f.allocator->memory_stats().at("allocated_bytes.all.current"), 0);
}

TEST(OomWorkload, LargestSingleOnTheOtherAllocators) {
  OomRun direct(8 * kGiB, spec("direct"));
  const Row& d = direct.run({"search=largest_single", "state=fresh"}).at(0);
  EXPECT_EQ(d.verdict, Verdict::pass) << d.reason;
  EXPECT_GE(median(d, "ratio"), 0.999);
  // Expandable segments map the large pool in 20 MiB pages: 409 of them fit in 8 GiB (12 MiB short).
  OomRun expandable(8 * kGiB, spec("expandable"));
  const Row& e = expandable.run({"search=largest_single", "state=fresh"}).at(0);
  EXPECT_EQ(e.verdict, Verdict::pass) << e.reason;
  EXPECT_EQ(median(e, "largest_allocatable"), static_cast<double>(409ULL * 20 * kMiB));
}

TEST(OomWorkload, AMemoryFractionCapsTheLargestAllocation) {
  OomRun f(8 * kGiB, spec("caching", "per_process_memory_fraction:0.5"));
  const Row& row = f.run({"search=largest_single", "state=fresh"}).at(0);
  EXPECT_EQ(row.verdict, Verdict::pass) << row.reason;
  EXPECT_NEAR(median(row, "ratio"), 0.5, 0.001);
  EXPECT_GT(median(row, "num_ooms"), 0);
}

// Under --alloc-limit (the limiting adaptor) every search sizes itself to the cap, not to the device: on an
// H100 the fragmented state asked for 30% of 80 GB through a 2 GiB cap and ended in an error row.
TEST(OomWorkload, EverySearchRespectsAnAllocationLimit) {
  OomRun f(16 * kGiB, spec("caching"));
  f.allocator = make_limiting_allocator(std::move(f.allocator), 2 * kGiB);
  const std::vector<Row>& rows = f.run({"search=largest_single,batch", "state=fresh,fragmented"}, 1);
  ASSERT_EQ(rows.size(), 4U);
  for (const Row& row : rows) {
    EXPECT_EQ(row.verdict, Verdict::pass) << row.case_label() << ": " << row.reason;
    EXPECT_EQ(row.errors, 0U) << row.case_label();
  }
  EXPECT_EQ(median(find(rows, "largest_single", "fresh"), "largest_allocatable"),
            static_cast<double>(2 * kGiB));
  EXPECT_NEAR(median(find(rows, "largest_single", "fresh"), "ratio"), 1.0, 0.001);  // of what the cap allows
  EXPECT_LT(median(find(rows, "largest_single", "fragmented"), "largest_allocatable"),
            static_cast<double>(2 * kGiB));
  EXPECT_GE(median(find(rows, "batch", "fresh"), "max_batch"), 8);  // the profile is scaled to the cap
  EXPECT_EQ(f.failures, 0);
}

TEST(OomWorkload, FragmentingLowersTheLargestSingleAllocation) {
  OomRun f(8 * kGiB, spec("caching"));
  const auto& rows = f.run({"search=largest_single"});
  EXPECT_LT(median(find(rows, "largest_single", "fragmented"), "largest_allocatable"),
            median(find(rows, "largest_single", "fresh"), "largest_allocatable"));
}

// The batch search's answer, found again by trying every batch size from 1 up.
std::uint64_t linear_scan(const AllocatorSpec& s, std::uint64_t capacity, const suites::BatchProfile& profile,
                          bool fragmented) {
  SimBackend device(capacity);
  const auto allocator = make_allocator(s, device);
  suites::LiveBlocks held(*allocator, false);
  static_cast<void>(held.allocate(profile.params));
  if (fragmented) {
    static_cast<void>(suites::fragment(
        held, static_cast<std::uint64_t>(0.3 * static_cast<double>(suites::allocatable_bound(*allocator)))));
  }
  std::uint64_t fits = 0;
  for (std::uint64_t n = 1;; ++n) {
    suites::LiveBlocks trial(*allocator, false);
    suites::SearchLog log;
    if (!suites::try_batch(trial, profile, n, log)) {
      return fits;
    }
    fits = n;
    trial.release_all();
    allocator->empty_cache();
  }
}

TEST(OomWorkload, BatchSearchAgreesWithALinearScan) {
  constexpr std::uint64_t kCapacity = kGiB;
  const suites::BatchProfile profile = suites::BatchProfile::fit(kCapacity, 0.25, 8 * kMiB, 32 * kMiB);
  EXPECT_TRUE(profile.adjustments.empty());
  for (const char* name : {"caching", "expandable", "direct"}) {
    OomRun f(kCapacity, spec(name));
    const auto& rows = f.run({"search=batch", "params_frac=0.25", "per_sample=8M", "workspace=32M"});
    EXPECT_EQ(f.failures, 0) << name;
    for (const bool fragmented : {false, true}) {
      const Row& row = find(rows, "batch", fragmented ? "fragmented" : "fresh");
      SCOPED_TRACE(std::string(name) + " " + row.case_label());
      EXPECT_EQ(row.verdict, Verdict::pass) << row.reason;
      const auto expected = static_cast<double>(linear_scan(spec(name), kCapacity, profile, fragmented));
      EXPECT_GT(expected, 0);
      EXPECT_EQ(median(row, "max_batch"), expected);
      EXPECT_LT(median(row, "probes"), expected);  // halving and bisecting beat trying them all
    }
  }
}

TEST(OomWorkload, AFragmentedAllocatorNeverFitsALargerBatch) {
  for (const char* name : {"caching", "expandable", "direct"}) {
    OomRun f(8 * kGiB, spec(name));
    const auto& rows = f.run({"search=batch"});
    ASSERT_EQ(rows.size(), 2U);
    const double fresh = median(find(rows, "batch", "fresh"), "max_batch");
    const double fragmented = median(find(rows, "batch", "fragmented"), "max_batch");
    EXPECT_GT(fresh, 0) << name;
    EXPECT_LE(fragmented, fresh) << name;
    if (std::string_view(name) == "caching") {
      EXPECT_LT(fragmented, fresh);  // the freed 8 MiB pieces cannot hold batch tensors
    }
  }
}

TEST(OomWorkload, OomsAreCountedAndNotedNeverAnErrorRow) {
  OomRun f(8 * kGiB, spec("caching"));
  const auto& rows = f.run({});
  EXPECT_EQ(f.failures, 0);
  ASSERT_EQ(rows.size(), 4U);
  for (const Row& row : rows) {
    SCOPED_TRACE(row.case_label());
    EXPECT_EQ(row.verdict, Verdict::pass) << row.reason;
    EXPECT_EQ(row.errors, 0U);
    if (row.params.at(0).second == "batch") {
      EXPECT_GT(median(row, "num_ooms"), 0);
      ASSERT_FALSE(row.notes.empty());
      EXPECT_NE(row.notes.back().find("first OOM"), std::string::npos) << row.notes.back();
      EXPECT_LE(row.notes.back().size(), 400U);
    }
  }
  EXPECT_GT(f.allocator->memory_stats().at("num_ooms"), 0);
  EXPECT_EQ(f.allocator->memory_stats().at("allocated_bytes.all.current"), 0);
}

TEST(OomWorkload, ASmallDeviceScalesTheProfileDownAndSaysSo) {
  OomRun f(256 * kMiB, spec("caching"));
  const Row& row = f.run({"search=batch", "state=fresh"}).at(0);
  EXPECT_EQ(row.verdict, Verdict::pass) << row.reason;
  EXPECT_GE(median(row, "max_batch"), 7);  // scaled so that about 8 fit
  ASSERT_FALSE(row.notes.empty());
  EXPECT_NE(row.notes[0].find("scaled to the device"), std::string::npos) << row.notes[0];
}

TEST(MaxFitting, FindsTheThresholdFromAnyStart) {
  for (const std::uint64_t threshold : std::vector<std::uint64_t>{0, 1, 2, 3, 7, 100, 1000, 4097}) {
    for (const std::uint64_t start :
         std::vector<std::uint64_t>{1, 2, 5, threshold, threshold + 1, 2 * threshold + 2}) {
      int asked = 0;
      const std::uint64_t found = suites::max_fitting(start, [&](std::uint64_t n) {
        EXPECT_GT(n, 0U);
        ++asked;
        return n <= threshold;
      });
      EXPECT_EQ(found, threshold) << "start " << start;
      EXPECT_LT(asked, 64) << "start " << start;
    }
  }
}

// Every answer, wherever the hint lies (under it, at it, above it, past the top), is found exactly, never
// asking about 0 or past the top, in about 2 log2 of the distance from the hint.
TEST(LargestFrom, FindsEveryAnswerFromAnyHint) {
  for (std::uint64_t top = 0; top <= 40; ++top) {
    for (std::uint64_t answer = 0; answer <= top; ++answer) {
      for (std::uint64_t hint = 0; hint <= top + 5; ++hint) {
        int asked = 0;
        const std::uint64_t found = suites::largest_from(hint, top, [&](std::uint64_t n) {
          ++asked;
          EXPECT_GT(n, 0U);
          EXPECT_LE(n, top);
          return n <= answer;
        });
        ASSERT_EQ(found, answer) << "top " << top << " hint " << hint;
        EXPECT_LE(asked, 14) << "top " << top << " hint " << hint << " answer " << answer;
      }
    }
  }
}

TEST(LargestFrom, AnswerNextToTheHintTakesAFewQuestions) {
  const std::uint64_t top = 80'000;  // steps of 1 MiB in 80 GB
  for (const std::uint64_t answer : {top, top - 1, top - 3, top - 7}) {
    int asked = 0;
    const std::uint64_t found = suites::largest_from(top, top, [&](std::uint64_t n) {
      ++asked;
      return n <= answer;
    });
    EXPECT_EQ(found, answer);
    EXPECT_LE(asked, 6) << "answer " << answer;  // bisection from 0 asks 17
  }
}

TEST(LargestAllocatable, BisectsToTheStep) {
  SimBackend device(kGiB);
  const auto allocator = make_allocator("caching", device);
  suites::LiveBlocks held(*allocator, false);
  static_cast<void>(held.allocate(100 * kMiB));
  suites::SearchLog log;
  const std::uint64_t largest =
      suites::largest_allocatable(*allocator, suites::allocatable_bound(*allocator), kMiB, log);
  EXPECT_EQ(largest, kGiB - 100 * kMiB);
  EXPECT_GE(log.probes, 1U);
  EXPECT_LE(log.probes, 4U);  // from the free memory, not bisection from 0
  EXPECT_EQ(allocator->memory_stats().at("reserved_bytes.all.current"),
            static_cast<std::int64_t>(100 * kMiB));
}

TEST(SearchLog, KeepsTheFirstMessageTruncated) {
  suites::SearchLog log;
  log.refused(OutOfMemoryError(std::string(1000, 'x')));
  log.refused(OutOfMemoryError("second"));
  EXPECT_EQ(log.ooms, 2U);
  EXPECT_EQ(log.first_oom.size(), suites::SearchLog::kMessageChars + 3);
}

}  // namespace
}  // namespace memstress
