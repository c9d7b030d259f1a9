// The `streams` workload on the simulated device: many threads, one stream each, allocating, handing
// blocks to the next stream (record_stream) and freeing them through one allocator; every block aligned
// and disjoint from all live blocks of all threads, nothing left allocated.

#include <gtest/gtest.h>

#include <string>

#include "harness/core/error.hpp"
#include "workload_run.hpp"

namespace memstress {
namespace {

using testing::median;
using testing::SimWorkloadRun;
using testing::spec;

constexpr std::uint64_t kGiB = 1ULL << 30;

class StreamsOnEveryAllocator : public ::testing::TestWithParam<const char*> {};

TEST_P(StreamsOnEveryAllocator, ThreadsShareTheAllocatorWithoutOverlap) {
  SimWorkloadRun run("streams", 8 * kGiB, spec(GetParam()));
  const auto& rows = run.run({"streams=1,8,32", "ops=50", "cross=true,false"});
  ASSERT_EQ(rows.size(), 6U);
  EXPECT_EQ(run.failures, 0);
  for (const Row& row : rows) {
    EXPECT_EQ(row.verdict, Verdict::pass) << row.case_label() << ": " << row.reason;
    const auto streams = static_cast<std::uint64_t>(std::stoi(row.params[0].second));
    EXPECT_EQ(row.checked, streams * 50 * 3) << row.case_label();  // warm-up + 2 repetitions
    EXPECT_EQ(row.errors, 0U);
    EXPECT_GT(median(row, "ops/s"), 0);
    EXPECT_GE(median(row, "pending_free_peak"), 0);
  }
  EXPECT_EQ(run.stat("allocated_bytes.all.current"), 0);
}

INSTANTIATE_TEST_SUITE_P(Allocators, StreamsOnEveryAllocator,
                         ::testing::Values("caching", "expandable", "direct"));

// The axis's maximum: refused when the plan is made (exit 2), not an error row at run time.
TEST(StreamsWorkload, MoreThan32StreamsIsRefusedNamingTheLimit) {
  SimWorkloadRun run("streams", 8 * kGiB, spec("caching"));
  try {
    static_cast<void>(run.run({"streams=33", "ops=1"}));
    ADD_FAILURE() << "streams=33 was planned";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("-p streams.streams: '33' is above the maximum 32"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace memstress
