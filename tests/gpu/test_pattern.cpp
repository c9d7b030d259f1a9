#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "gpu_test.hpp"
#include "harness/core/cuda_check.hpp"
#include "harness/core/error.hpp"
#include "harness/core/planted_faults.hpp"
#include "kernels/copy.hpp"
#include "kernels/pattern.hpp"

namespace memstress {
namespace {

using kernels::Checker;
using kernels::Pattern;

class PatternTest : public testing::GpuTest {};

TEST_F(PatternTest, EveryPatternVerifiesCleanAtAwkwardSizes) {
  cuda::Stream stream;
  Checker checker;
  // Odd word counts and partial tail words exercise the non-vector paths.
  for (const std::size_t bytes : {std::size_t{8}, std::size_t{24}, std::size_t{4099}, std::size_t{1} << 20,
                                  (std::size_t{64} << 20) + 13}) {
    const cuda::DeviceBuffer buffer(bytes);
    for (const Pattern p : kernels::all_patterns()) {
      kernels::fill(buffer.data(), bytes, p, 42, stream.get());
      const kernels::CheckResult r = checker.check(buffer.data(), bytes, p, 42, stream.get());
      EXPECT_TRUE(r.ok()) << kernels::to_string(p) << " at " << bytes << " bytes: " << r.bad_words << " bad";
      EXPECT_EQ(r.checked_words, (bytes + 7) / 8);
      EXPECT_EQ(r.first_bad_word, kernels::CheckResult::kNone);
    }
  }
}

// kernels::sm_copy_both: even warps copy one buffer, odd warps the other, each with its own tail; a copy of a
// tail alone (under one vector), a partial last vector and a grid shared by several streams included, and
// nothing written past `bytes`.
TEST_F(PatternTest, SplitWarpCopyCopiesBothBuffersWholeAndNoMore) {
  constexpr std::size_t kGuard = 64;
  constexpr unsigned char kUntouched = 0xAB;
  cuda::Stream stream;
  Checker checker;
  for (const std::size_t bytes :
       {std::size_t{8}, std::size_t{13}, std::size_t{24}, std::size_t{4099}, (std::size_t{64} << 20) + 13}) {
    for (const unsigned sharing : {1U, 4U}) {
      const cuda::DeviceBuffer src_a(bytes);
      const cuda::DeviceBuffer src_b(bytes);
      const cuda::DeviceBuffer dst_a(bytes + kGuard);
      const cuda::DeviceBuffer dst_b(bytes + kGuard);
      kernels::fill(src_a.data(), bytes, Pattern::random, 1, stream.get());
      kernels::fill(src_b.data(), bytes, Pattern::random, 2, stream.get());
      MEMSTRESS_CUDA_TRY(cudaMemsetAsync(dst_a.data(), kUntouched, bytes + kGuard, stream.get()));
      MEMSTRESS_CUDA_TRY(cudaMemsetAsync(dst_b.data(), kUntouched, bytes + kGuard, stream.get()));
      kernels::sm_copy_both(dst_a.data(), src_a.data(), dst_b.data(), src_b.data(), bytes, stream.get(),
                            sharing);
      const kernels::CheckResult a = checker.check(dst_a.data(), bytes, Pattern::random, 1, stream.get());
      const kernels::CheckResult b = checker.check(dst_b.data(), bytes, Pattern::random, 2, stream.get());
      EXPECT_TRUE(a.ok()) << bytes << " bytes, sharing " << sharing << ": " << a.bad_words
                          << " bad in the first";
      EXPECT_TRUE(b.ok()) << bytes << " bytes, sharing " << sharing << ": " << b.bad_words
                          << " bad in the second";
      for (const cuda::DeviceBuffer* dst : {&dst_a, &dst_b}) {
        std::vector<unsigned char> guard(kGuard);
        MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(guard.data(), static_cast<unsigned char*>(dst->data()) + bytes,
                                           kGuard, cudaMemcpyDeviceToHost, stream.get()));
        stream.synchronize();
        EXPECT_EQ(std::count(guard.begin(), guard.end(), kUntouched), static_cast<std::ptrdiff_t>(kGuard))
            << bytes << " bytes, sharing " << sharing << ": written past the end";
      }
    }
  }
}

TEST_F(PatternTest, DeviceDataMatchesTheHostReference) {
  cuda::Stream stream;
  constexpr std::size_t kWords = 4097;
  const cuda::DeviceBuffer buffer(kWords * 8);
  kernels::fill(buffer.data(), kWords * 8, Pattern::random, 7, stream.get());
  std::vector<std::uint64_t> host(kWords);
  MEMSTRESS_CUDA_TRY(
      cudaMemcpyAsync(host.data(), buffer.data(), kWords * 8, cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  for (std::size_t i = 0; i < kWords; ++i) {
    ASSERT_EQ(host[i], kernels::pattern_word(Pattern::random, 7, i)) << "word " << i;
  }
}

TEST_F(PatternTest, PlantedCorruptionIsFoundWithItsPosition) {
  cuda::Stream stream;
  Checker checker;
  constexpr std::size_t kBytes = std::size_t{256} << 20;
  const cuda::DeviceBuffer buffer(kBytes);
  kernels::fill(buffer.data(), kBytes, Pattern::random, 99, stream.get());
  ASSERT_TRUE(checker.check(buffer.data(), kBytes, Pattern::random, 99, stream.get()).ok());

  // Flip one bit in word 12345678 and overwrite three bytes in the last word.
  constexpr std::size_t kWord = 12345678;
  std::uint64_t value = kernels::pattern_word(Pattern::random, 99, kWord) ^ (1ULL << 17);
  auto* base = static_cast<unsigned char*>(buffer.data());
  MEMSTRESS_CUDA_TRY(cudaMemcpy(base + kWord * 8, &value, 8, cudaMemcpyHostToDevice));
  const unsigned char junk[3] = {0xde, 0xad, 0x00};
  MEMSTRESS_CUDA_TRY(cudaMemcpy(base + kBytes - 3, junk, 3, cudaMemcpyHostToDevice));

  const kernels::CheckResult r = checker.check(buffer.data(), kBytes, Pattern::random, 99, stream.get());
  EXPECT_EQ(r.bad_words, 2U);
  EXPECT_EQ(r.first_bad_word, kWord);
  // A different seed is a different pattern: everything is wrong.
  EXPECT_EQ(checker.check(buffer.data(), kBytes, Pattern::random, 100, stream.get()).bad_words, kBytes / 8);
}

TEST_F(PatternTest, MovingInversionsFindNothingOnHealthyMemoryAndLeaveThePattern) {
  cuda::Stream stream;
  Checker checker;
  for (const std::size_t bytes : {std::size_t{8}, std::size_t{24}, (std::size_t{64} << 20) + 8}) {
    const cuda::DeviceBuffer buffer(bytes);
    for (const Pattern p : kernels::all_patterns()) {
      kernels::fill(buffer.data(), bytes, p, 5, stream.get());
      const kernels::CheckResult moved = checker.invert(buffer.data(), bytes, p, 5, stream.get());
      EXPECT_TRUE(moved.ok()) << kernels::to_string(p) << " at " << bytes << ": " << moved.bad_words
                              << " bad";
      EXPECT_EQ(moved.checked_words, 2 * (bytes / 8));
      EXPECT_TRUE(checker.check(buffer.data(), bytes, p, 5, stream.get()).ok()) << kernels::to_string(p);
    }
  }
}

TEST_F(PatternTest, MovingInversionsFindAWordThatDidNotHoldItsValue) {
  cuda::Stream stream;
  Checker checker;
  constexpr std::size_t kBytes = std::size_t{32} << 20;
  constexpr std::size_t kWord = 777777;
  const cuda::DeviceBuffer buffer(kBytes);
  kernels::fill(buffer.data(), kBytes, Pattern::walking_zeros, 3, stream.get());
  const std::uint64_t value = kernels::pattern_word(Pattern::walking_zeros, 3, kWord) ^ (1ULL << 40);
  MEMSTRESS_CUDA_TRY(
      cudaMemcpy(static_cast<unsigned char*>(buffer.data()) + kWord * 8, &value, 8, cudaMemcpyHostToDevice));
  // Up: the word differs from the pattern and is counted; the pass writes the complement of what should be
  // there, so the healthy cell reads right going down: a bad read counts once (a stuck cell would count in
  // both passes: PlantedStuckAndFlippedBitsAreFoundWhereTheyWerePut).
  const kernels::CheckResult moved =
      checker.invert(buffer.data(), kBytes, Pattern::walking_zeros, 3, stream.get());
  EXPECT_EQ(moved.bad_words, 1U);
  EXPECT_EQ(moved.first_bad_word, kWord);
  EXPECT_THROW((void)checker.invert(buffer.data(), 12, Pattern::zeros, 0, stream.get()), InputError);
}

// A fault-hook build (the `faults` preset) plants what MEMSTRESS_PLANT_FAULT asks for; every other build
// plants nothing, whatever the variable says.
TEST_F(PatternTest, PlantedStuckAndFlippedBitsAreFoundWhereTheyWerePut) {
  ::setenv("MEMSTRESS_PLANT_FAULT", "stuck:100:5:1,flip:200:7,flip:300:1",
           1);  // NOLINT(concurrency-mt-unsafe)
  Checker checker(/*planted=*/true);
  Checker bystander;                    // a checker not asked to plant sees nothing
  ::unsetenv("MEMSTRESS_PLANT_FAULT");  // NOLINT(concurrency-mt-unsafe)
  cuda::Stream stream;
  constexpr std::size_t kBytes = std::size_t{1} << 20;
  const cuda::DeviceBuffer buffer(kBytes);
  kernels::fill(buffer.data(), kBytes, Pattern::zeros, 0, stream.get());
  const kernels::CheckResult first = checker.check(buffer.data(), kBytes, Pattern::zeros, 0, stream.get());
  if (!fault_hooks_built()) {
    EXPECT_TRUE(first.ok()) << "a build without fault hooks planted a fault";
    GTEST_SKIP() << "planting needs a fault-hook build (cmake --preset faults)";
  }
  EXPECT_EQ(first.bad_words, 3U);  // the stuck bit and the two flipped reads
  EXPECT_EQ(first.first_bad_word, 100U);
  for (int again = 0; again < 2; ++again) {  // each flip was one bad read, both undone; the stuck bit stays
    const kernels::CheckResult r = checker.check(buffer.data(), kBytes, Pattern::zeros, 0, stream.get());
    EXPECT_EQ(r.bad_words, 1U);
    EXPECT_EQ(r.first_bad_word, 100U);
  }
  // Moving inversions find a stuck bit in exactly one of their passes, whatever the pattern.
  kernels::fill(buffer.data(), kBytes, Pattern::random, 9, stream.get());
  EXPECT_EQ(checker.invert(buffer.data(), kBytes, Pattern::random, 9, stream.get()).bad_words, 1U);
  // Stuck at 1 is invisible to a check where the pattern has a 1 there.
  kernels::fill(buffer.data(), kBytes, Pattern::ones, 0, stream.get());
  EXPECT_TRUE(checker.check(buffer.data(), kBytes, Pattern::ones, 0, stream.get()).ok());
  kernels::fill(buffer.data(), kBytes, Pattern::zeros, 0, stream.get());
  EXPECT_TRUE(bystander.check(buffer.data(), kBytes, Pattern::zeros, 0, stream.get()).ok());
}

TEST_F(PatternTest, SpinHoldsTheStream) {
  cuda::Stream stream;
  const cuda::Event start;
  const cuda::Event stop;
  start.record(stream.get());
  kernels::spin(2'000'000, stream.get());  // 2 ms
  stop.record(stream.get());
  stop.synchronize();
  EXPECT_GE(cuda::Event::elapsed_ms(start, stop), 1.9F);
}

}  // namespace
}  // namespace memstress
