#include <gtest/gtest.h>

#include "harness/alloc/alloc_config.hpp"
#include "harness/alloc/caching/sizing.hpp"
#include "harness/core/error.hpp"

namespace memstress {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;

TEST(AllocConfig, ParsesPyTorchSyntax) {
  const AllocConfig c = AllocConfig::parse(
      "max_split_size_mb:128, garbage_collection_threshold:0.8,expandable_segments:True,"
      "roundup_power2_divisions:4,per_process_memory_fraction:0.5,release_lock_on_cudamalloc:True",
      "--alloc-conf");
  EXPECT_EQ(c.max_split_size, 128 * kMiB);
  EXPECT_DOUBLE_EQ(c.garbage_collection_threshold, 0.8);
  EXPECT_TRUE(c.expandable_segments);
  EXPECT_EQ(c.divisions_for(3 * kMiB), 4U);
  EXPECT_EQ(c.memory_fraction.value(), 0.5);
  const AllocConfig defaults = AllocConfig::parse("", "--alloc-conf");
  EXPECT_EQ(defaults.max_split_size, AllocConfig::kUnlimited);
  EXPECT_FALSE(defaults.expandable_segments);
}

TEST(AllocConfig, DivisionListFillsIntervalsLikePyTorch) {
  const AllocConfig c = AllocConfig::parse("roundup_power2_divisions:[256:1,512:2,>:8]", "--alloc-conf");
  EXPECT_EQ(c.divisions_for(1 * kMiB), 1U);    // below the first entry: its value
  EXPECT_EQ(c.divisions_for(300 * kMiB), 1U);  // [256 MiB, 512 MiB)
  EXPECT_EQ(c.divisions_for(600 * kMiB), 2U);  // [512 MiB, 1 GiB)
  EXPECT_EQ(c.divisions_for(2048 * kMiB), 8U);
  EXPECT_EQ(c.divisions_for(1ULL << 40), 8U);
}

TEST(AllocConfig, RejectsBadInputNamingTheKey) {
  for (const char* bad :
       {"max_split_size_mb:10", "max_split_size_mb:x", "expandable_segments:yes",
        "garbage_collection_threshold:1.5", "roundup_power2_divisions:3", "frobnicate:1", "max_split_size_mb",
        "roundup_power2_divisions:[100:2]", "per_process_memory_fraction:0"}) {
    try {
      static_cast<void>(AllocConfig::parse(bad, "--alloc-conf"));
      ADD_FAILURE() << "accepted " << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--alloc-conf"), std::string::npos) << e.what();
    }
  }
}

TEST(Sizing, RoundingLikePyTorch) {
  const AllocConfig plain;
  EXPECT_EQ(caching::round_size(1, plain), 512U);
  EXPECT_EQ(caching::round_size(513, plain), 1024U);
  EXPECT_EQ(caching::round_size(kMiB + 1, plain), kMiB + 512);
  const AllocConfig four = AllocConfig::parse("roundup_power2_divisions:4", "x");
  EXPECT_EQ(caching::round_size(1200, four), 1536U);  // 1200 <= 512 x 4: plain rounding
  EXPECT_EQ(caching::round_size(5'000'000, four), 5 * kMiB);
  EXPECT_EQ(caching::round_size(4 * kMiB, four), 4 * kMiB);
  EXPECT_EQ(caching::roundup_power2_next_division(1025 * kMiB, 8), 1152 * kMiB);
}

TEST(Sizing, PoolsAndSegments) {
  using caching::PoolKind;
  EXPECT_EQ(caching::pool_for(kMiB), PoolKind::small);
  EXPECT_EQ(caching::pool_for(kMiB + 512), PoolKind::large);
  EXPECT_EQ(caching::allocation_size(512), 2 * kMiB);
  EXPECT_EQ(caching::allocation_size(kMiB + 512), 20 * kMiB);
  EXPECT_EQ(caching::allocation_size(10 * kMiB), 10 * kMiB);
  EXPECT_EQ(caching::allocation_size(11 * kMiB), 12 * kMiB);
}

}  // namespace
}  // namespace memstress
