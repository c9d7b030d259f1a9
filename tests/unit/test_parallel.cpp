// harness/core/parallel.hpp: every job runs once, results land where the job writes them, the first
// exception comes back after every thread stopped, and no jobs is no work.

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "harness/core/parallel.hpp"

namespace memstress {
namespace {

TEST(ParallelFor, EveryJobRunsOnceInItsOwnSlot) {
  std::vector<int> out(1000, 0);
  parallel_for(out.size(), 4, [&](std::size_t i) { out[i] += static_cast<int>(i) + 1; });
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i], static_cast<int>(i) + 1);
  }
}

TEST(ParallelFor, NoJobsIsNoWorkAndOneThreadIsTheCallers) {
  std::atomic<int> calls{0};
  parallel_for(0, 8, [&](std::size_t) { ++calls; });
  EXPECT_EQ(calls, 0);
  parallel_for(3, 0, [&](std::size_t) { ++calls; });
  EXPECT_EQ(calls, 3);
  EXPECT_GE(default_threads(100), 1U);
  EXPECT_EQ(default_threads(0), 1U);
}

TEST(ParallelFor, TheFirstExceptionIsRethrownAndLaterJobsAreNotStarted) {
  // On one thread the order is fixed: jobs 0 to 3 start, 3 throws, none after it starts.
  std::atomic<int> started{0};
  const auto job = [&](std::size_t i) {
    ++started;
    if (i == 3) {
      throw std::runtime_error("job 3");
    }
  };
  EXPECT_THROW(parallel_for(10000, 1, job), std::runtime_error);
  EXPECT_EQ(started.load(), 4);
  // On several the other threads may finish everything before job 3 runs; its exception still comes back.
  started = 0;
  EXPECT_THROW(parallel_for(10000, 4, job), std::runtime_error);
  EXPECT_LE(started.load(), 10000);
}

}  // namespace
}  // namespace memstress
