// The collectives workload on a real GPU: the check kernel accepts what the fill kernel wrote and catches a
// planted error in every dtype, and a one-rank run through the Runner (a communicator of one rank, made for
// the case) passes every collective, in and out of place, quiet and under churn, with its data verified.

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "gpu_test.hpp"
#include "harness/alloc/factory.hpp"
#include "harness/alloc/pinned_host_allocator.hpp"
#include "harness/core/cuda_check.hpp"
#include "harness/memory/cuda_backend.hpp"
#include "harness/results/sink.hpp"
#include "harness/run/plan.hpp"
#include "harness/run/runner.hpp"
#include "kernels/collective.hpp"
#include "suites/registry.hpp"
#include "workload_on_gpu.hpp"

namespace memstress {
namespace {

using kernels::Collective;
using kernels::DType;

class CollectivesTest : public testing::GpuTest {};

TEST_F(CollectivesTest, CheckKernelCatchesAPlantedErrorInEveryDtype) {
  const cuda::Stream stream;
  kernels::CollectiveChecker checker;
  constexpr std::uint64_t kCount = (1U << 20U) + 3;
  for (const DType t : {DType::f32, DType::f16, DType::bf16, DType::i32, DType::f64}) {
    const cuda::DeviceBuffer buffer(kCount * kernels::dtype_size(t));
    // One rank: an all_reduce leaves its input as it was.
    const std::uint64_t m = kernels::value_modulus(Collective::all_reduce, 1);
    kernels::fill_collective_input(buffer.data(), t, kCount, 0, 5, m, stream.get());
    const kernels::CollectiveCase c{Collective::all_reduce, 1, 0, kCount, 5, m};
    checker.enqueue(buffer.data(), t, kCount, c, stream.get());
    stream.synchronize();
    EXPECT_TRUE(checker.result().ok()) << static_cast<int>(t) << ": " << checker.result().bad_words;
    EXPECT_EQ(checker.result().checked_words, kCount);
    // Another salt is another repetition: nearly every element is stale.
    const kernels::CollectiveCase next{Collective::all_reduce, 1, 0, kCount, 6, m};
    checker.enqueue(buffer.data(), t, kCount, next, stream.get());
    stream.synchronize();
    EXPECT_GT(checker.result().bad_words, kCount / 2);
    // One element zeroed (0 is never a value): exactly one error, where it was planted.
    const std::uint64_t at = 777'777;
    auto* bytes = static_cast<unsigned char*>(buffer.data());
    MEMSTRESS_CUDA_TRY(
        cudaMemsetAsync(bytes + at * kernels::dtype_size(t), 0, kernels::dtype_size(t), stream.get()));
    checker.enqueue(buffer.data(), t, kCount, c, stream.get());
    stream.synchronize();
    EXPECT_EQ(checker.result().bad_words, 1U) << static_cast<int>(t);
    EXPECT_EQ(checker.result().first_bad_word, at) << static_cast<int>(t);
  }
}

TEST_F(CollectivesTest, OneRankRunPassesEveryCollectiveWithItsDataVerified) {
  // Under compute-sanitizer (testing::sanitizer_sizes): every collective, in and out of place, quiet and
  // under churn, in one dtype at 64 KiB, once each. Each NCCL kernel is instrumented as it first runs, and
  // racecheck did not get through the five dtypes' kernels at any size in 320 s (scripts/lab/gpu-sanitize on
  // an H100; its record, results/h100/sanitize-580.159.04/, is in the history). Otherwise two sizes, 1 and 16
  // MiB, both cut by NCCL into many chunks: the 80 cases verify every byte on the device, and at 64 MiB they
  // held the GPU for 44 s of a node's test run.
  const bool small = testing::sanitizer_sizes();
  const auto rows = testing::run_on_gpu("collectives",
                                        {small ? "dtype=float" : "dtype=float,bfloat16", "place=out,in",
                                         "pressure=none,churn", small ? "bytes=64K" : "bytes=1M,16M"},
                                        small ? 1 : 2);
  EXPECT_EQ(rows.size(), small ? 20U : 80U);  // the combinations that apply
  for (const Row& row : rows) {
    const MetricResult* algbw = row.metric("algbw");
    ASSERT_NE(algbw, nullptr) << row.case_label();
    EXPECT_GT(algbw->summary.median, 0.0) << row.case_label();
    const bool churn = row.case_label().find("pressure=churn") != std::string::npos;
    EXPECT_EQ(row.metric("slowdown") != nullptr, churn) << row.case_label();
    EXPECT_EQ(row.metric("vs_ref") != nullptr, !churn) << row.case_label();
  }
}

TEST_F(CollectivesTest, HostAndGraphTimingOnAllocatorAndNcclBuffers) {
  // nccl-tests' two timing modes, from 8 bytes, on the shared allocator's buffers and on ncclMemAlloc's.
  const auto rows = testing::run_on_gpu("collectives",
                                        {"collective=all_reduce,sendrecv", "pressure=none",
                                         "timing=host,graph", "buffers=allocator,ncclmem", "bytes=8,1M"},
                                        2);
  EXPECT_EQ(rows.size(), 16U);
  for (const Row& row : rows) {
    EXPECT_EQ(row.verdict, Verdict::pass) << row.case_label() << ": " << row.reason;
    const MetricResult* time = row.metric("time");
    ASSERT_NE(time, nullptr) << row.case_label();
    EXPECT_GT(time->summary.median, 0.0) << row.case_label();
    EXPECT_GT(row.checked, 0U) << row.case_label();
    EXPECT_EQ(row.errors, 0U) << row.case_label();
  }
}

TEST_F(CollectivesTest, GraphEachCapturesAGraphEveryRepetitionAndVerifiesItsData) {
  // nccl-tests' -G 1 as it does it: a new graph per repetition, beside the graph captured once.
  const auto rows = testing::run_on_gpu(
      "collectives", {"collective=all_reduce", "pressure=none", "timing=graph,graph_each", "bytes=8,1M"}, 3);
  EXPECT_EQ(rows.size(), 4U);
  for (const Row& row : rows) {
    EXPECT_EQ(row.verdict, Verdict::pass) << row.case_label() << ": " << row.reason;
    const MetricResult* time = row.metric("time");
    ASSERT_NE(time, nullptr) << row.case_label();
    EXPECT_GT(time->summary.median, 0.0) << row.case_label();
    EXPECT_GT(row.checked, 0U) << row.case_label();
    EXPECT_EQ(row.errors, 0U) << row.case_label();
  }
}

TEST_F(CollectivesTest, RotatedCollectivesVerifyTheirDataInEverySlot) {
  // Note [Rotation]: 16 slots of 64 KiB in 1 MiB; repetition r verifies slot r, so three repetitions check
  // three slots' addresses, in place and out of place, in each timing, with the L2 written over before
  // every timed region.
  const auto rows = testing::run_on_gpu(
      "collectives",
      {"collective=all_reduce,all_gather,reduce_scatter,alltoall", "place=out,in", "pressure=none",
       "timing=events,host,graph,graph_each", "bytes=64K", "rotate=1M", "l2=flushed"},
      3);
  EXPECT_EQ(rows.size(), 28U);  // alltoall has no in-place case
  for (const Row& row : rows) {
    EXPECT_EQ(row.verdict, Verdict::pass) << row.case_label() << ": " << row.reason;
    EXPECT_NE(row.case_label().find("rotate=1M l2=flushed"), std::string::npos) << row.case_label();
    EXPECT_GT(row.checked, 0U) << row.case_label();
    EXPECT_EQ(row.errors, 0U) << row.case_label();
  }
}

TEST_F(CollectivesTest, NcclMemoryMeasuresTheContextAndACommunicatorThatLeavesNothing) {
  const auto rows = testing::run_on_gpu("nccl_memory", {"cycles=3"}, 2);
  ASSERT_EQ(rows.size(), 1U);
  const Row& row = rows.front();
  EXPECT_EQ(row.verdict, Verdict::pass) << row.reason;
  for (const char* metric :
       {"context", "comm_init", "first_all_reduce", "comm_total", "left_after_destroy", "cycle_growth"}) {
    EXPECT_NE(row.metric(metric), nullptr) << metric;
  }
  ASSERT_NE(row.metric("context"), nullptr);
  ASSERT_NE(row.metric("left_after_destroy"), nullptr);
  EXPECT_GT(row.metric("context")->summary.median, 0.0);
  EXPECT_LE(row.metric("left_after_destroy")->summary.median, 2.0);  // MiB
  EXPECT_GT(row.checked, 0U);
  EXPECT_EQ(row.errors, 0U);
}

}  // namespace
}  // namespace memstress
