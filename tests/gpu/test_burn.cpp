// The burn's stress on a real GPU: the canary's GEMMs give the same bits every time, and steps of the engine
// verify their data with no error, hash one result per GEMM and count their work.

#include <gtest/gtest.h>

#include "harness/alloc/factory.hpp"
#include "harness/alloc/pinned_host_allocator.hpp"
#include "harness/burn/engine.hpp"
#include "harness/memory/cuda_backend.hpp"
#include "suites/burn_engine.hpp"
#include "tests/gpu/gpu_test.hpp"

namespace memstress::testing {
namespace {

class BurnOnGpu : public GpuTest {};

TEST_F(BurnOnGpu, CanaryGemmsAgreeBitForBitAcrossRunsAndInstances) {
  CudaBackend dev(0);
  const auto alloc = make_allocator(AllocatorSpec{}, dev);
  const auto first = suites::canary_hashes(*alloc, 3);
  const auto again = suites::canary_hashes(*alloc, 2);
  ASSERT_EQ(first.size(), 3U);
  for (const auto& h : first) {
    EXPECT_EQ(h, first.front());
  }
  for (const auto& h : again) {
    EXPECT_EQ(h, first.front()) << "a fresh handle and buffers give other bits";
  }
  EXPECT_NE(first.front().first, 0U);
  EXPECT_NE(first.front().second, 0U);
}

TEST_F(BurnOnGpu, StepsVerifyEveryByteAndHashOneResultPerGemm) {
  CudaBackend dev(0);
  const auto alloc = make_allocator(AllocatorSpec{}, dev);
  PinnedHostAllocator host(make_host_memory_source("cuda"));
  {
    const auto engine = suites::make_cuda_burn_engine(*alloc, host, 0.2, 7, {});
    BurnWork work;
    for (int i = 0; i < 5; ++i) {  // step 0's first block holds a classic pattern: moving inversions
      engine->step(work, 0);
    }
    EXPECT_EQ(work.errors, 0U);
    EXPECT_GT(work.checked, 0U);
    EXPECT_EQ(work.steps, 5);
    EXPECT_GT(work.memory_bytes, 0);
    EXPECT_GT(work.h2d_bytes, 0);
    EXPECT_GT(work.d2h_bytes, 0);
    EXPECT_EQ(work.bf16_hashes.size(), 1U);
    EXPECT_EQ(work.fp64_hashes.size(), 1U);
  }
  EXPECT_EQ(alloc->memory_stats().at("allocated_bytes.all.current"), 0);
}

}  // namespace
}  // namespace memstress::testing
