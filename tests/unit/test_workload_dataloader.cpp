// The `dataloader` workload's host side on the simulated device (producer threads and forked producer
// processes, the shared ring, staging through the pinned cache or not, every batch checked), and the ring's
// failure path: a batch nobody produces is an error naming it, not a hang.

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>

#include "harness/core/error.hpp"
#include "suites/support/batch_ring.hpp"
#include "workload_run.hpp"

namespace memstress {
namespace {

using suites::BatchRing;
using suites::ProducerGroup;
using testing::median;
using testing::SimWorkloadRun;
using testing::spec;

constexpr std::uint64_t kGiB = 1ULL << 30;
constexpr std::uint64_t kBatch = 1ULL << 20;

TEST(DataloaderWorkload, ThreadsAndProcessesDeliverEveryBatchIntact) {
  SimWorkloadRun run("dataloader", 8 * kGiB, spec("caching"));
  const auto& rows = run.run({"workers=thread,process", "pin=true,false", "bytes=1M", "batches=24",
                              "producers=3", "prefetch=1", "pin_threads=2"});
  ASSERT_EQ(rows.size(), 4U);
  EXPECT_EQ(run.failures, 0);
  for (const Row& row : rows) {
    EXPECT_EQ(row.verdict, Verdict::pass) << row.case_label() << ": " << row.reason;
    EXPECT_EQ(row.checked, 24 * (kBatch / 8) * 3) << row.case_label();  // every word, warm-up + 2
    EXPECT_EQ(row.errors, 0U);
    EXPECT_GT(median(row, "samples/s"), 0);
    EXPECT_GE(median(row, "producer_wait"), 0);
    EXPECT_LE(median(row, "producer_wait"), 1.01);
  }
}

TEST(BatchRing, ProducedBatchesCheckCleanAndAStaleOneDoesNot) {
  const BatchRing ring(2, 4096, std::chrono::milliseconds(1000));
  ring.produce(7, 0);
  EXPECT_EQ(ring.count_bad(ring.slot(0), 7, 0), 0U);
  EXPECT_EQ(ring.count_bad(ring.slot(0), 7, 2), 4096U / 8);  // batch 2 lands in the same slot: all stale
  static_cast<unsigned char*>(ring.slot(0))[100] ^= 1U;
  EXPECT_EQ(ring.count_bad(ring.slot(0), 7, 0), 1U);
}

TEST(BatchRing, ABatchNeverProducedIsAnErrorNamingIt) {
  const BatchRing ring(2, 4096, std::chrono::milliseconds(50));
  try {
    ring.wait_ready(1);
    FAIL() << "wait_ready returned without a producer";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("batch 1 was not produced"), std::string::npos) << e.what();
  }
}

TEST(BatchRing, ProducerProcessesFillTheSharedRingInOrder) {
  const BatchRing ring(3, 8192, std::chrono::milliseconds(10'000));
  ProducerGroup producers(ProducerGroup::Kind::process, 2, ring, 11, 9);
  for (std::uint64_t b = 0; b < 9; ++b) {
    ring.wait_ready(b);
    EXPECT_EQ(ring.count_bad(ring.slot(b), 11, b), 0U) << "batch " << b;
    ring.release(b);
  }
  producers.join();
}

}  // namespace
}  // namespace memstress
