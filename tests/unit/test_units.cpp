#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "apps/flag_names.hpp"
#include "harness/core/error.hpp"
#include "harness/core/units.hpp"

namespace memstress {
namespace {

// The sweep's inputs named as `memstress run` names them (apps/flag_names.hpp).
const SizeSweepNames kSweepFlags = app::run_sweep_names();

TEST(ParseBytes, AcceptsNcclTestsSuffixesAsBinary) {
  EXPECT_EQ(parse_bytes("512", "-b"), 512U);
  EXPECT_EQ(parse_bytes("8", "-b"), 8U);
  EXPECT_EQ(parse_bytes("1K", "-b"), 1024U);
  EXPECT_EQ(parse_bytes("64M", "-b"), 64ULL << 20);
  EXPECT_EQ(parse_bytes("8G", "-b"), 8ULL << 30);
  EXPECT_EQ(parse_bytes("2T", "-b"), 2ULL << 40);
  EXPECT_EQ(parse_bytes("80GiB", "-b"), 80ULL << 30);
  EXPECT_EQ(parse_bytes("1.5G", "-b"), 3ULL << 29);
  EXPECT_EQ(parse_bytes("4k", "-b"), 4096U);
}

TEST(ParseBytes, DecimalUnitsAreDecimal) {
  EXPECT_EQ(parse_bytes("40GB", "-b"), 40'000'000'000ULL);
  EXPECT_EQ(parse_bytes("1KB", "-b"), 1000U);
  EXPECT_EQ(parse_bytes("100B", "-b"), 100U);
}

TEST(ParseBytes, RejectsGarbageNamingTheInput) {
  for (const char* bad : {"", "abc", "12Q", "-5", "1.5", "G", "1..2M", "1e3"}) {
    try {
      static_cast<void>(parse_bytes(bad, "--maxbytes"));
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--maxbytes"), std::string::npos) << e.what();
      EXPECT_EQ(e.exit_code(), ExitCode::bad_input);
    }
  }
}

TEST(FormatBytes, ExactAndRoundTrips) {
  EXPECT_EQ(format_bytes(0), "0B");
  EXPECT_EQ(format_bytes(100), "100B");
  EXPECT_EQ(format_bytes(1024), "1K");
  EXPECT_EQ(format_bytes(64ULL << 20), "64M");
  EXPECT_EQ(format_bytes(1536ULL << 20), "1536M");
  EXPECT_EQ(format_bytes(80ULL << 30), "80G");
  for (const std::uint64_t v : {1ULL, 512ULL, 1536ULL << 20, 3ULL << 40, 123457ULL}) {
    EXPECT_EQ(parse_bytes(format_bytes(v), "x"), v) << format_bytes(v);
  }
  EXPECT_EQ(format_bytes(123456789), "117.74M");
}

TEST(SizeSweep, GeometricLikeNcclTests) {
  EXPECT_EQ(size_sweep(1024, 8192, 2.0, 0, kSweepFlags),
            (std::vector<std::uint64_t>{1024, 2048, 4096, 8192}));
  EXPECT_EQ(size_sweep(1000, 5000, 2.0, 0, kSweepFlags), (std::vector<std::uint64_t>{1000, 2000, 4000}));
  EXPECT_EQ(size_sweep(8, 8, 2.0, 0, kSweepFlags), (std::vector<std::uint64_t>{8}));
}

TEST(SizeSweep, ArithmeticWithIncrement) {
  EXPECT_EQ(size_sweep(100, 400, 2.0, 100, kSweepFlags), (std::vector<std::uint64_t>{100, 200, 300, 400}));
}

TEST(SizeSweep, RejectsBadRanges) {
  EXPECT_THROW(size_sweep(0, 10, 2.0, 0, kSweepFlags), InputError);
  EXPECT_THROW(size_sweep(100, 10, 2.0, 0, kSweepFlags), InputError);
  EXPECT_THROW(size_sweep(1, 10, 1.0, 0, kSweepFlags), InputError);
}

TEST(SizeSweep, AFactorThatLeavesTheRangeOf64BitsEndsTheSweep) {
  // The next size was converted from a double of 6.4e39: undefined (fuzz/regressions/params/factor-8e38.txt)
  EXPECT_EQ(size_sweep(8, 64ULL << 20, 8e38, 0, kSweepFlags), (std::vector<std::uint64_t>{8}));
  EXPECT_EQ(size_sweep(1ULL << 62, std::numeric_limits<std::uint64_t>::max(), 4.0, 0, kSweepFlags),
            (std::vector<std::uint64_t>{1ULL << 62}));
  EXPECT_THROW(size_sweep(1, 8, std::numeric_limits<double>::infinity(), 0, kSweepFlags),
               InputError);  // not finite
}

// Each error names the input as the caller names it.
TEST(SizeSweep, ErrorsNameTheInputsAsTheCallerDoes) {
  const SizeSweepNames names{
      .begin = "from", .end = "to", .factor = "by", .sweep = "the sizes", .limit = "at most"};
  const auto message = [&](std::uint64_t begin, std::uint64_t end, double factor, std::size_t max_sizes) {
    try {
      static_cast<void>(size_sweep(begin, end, factor, 0, names, max_sizes));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(message(0, 10, 2.0, 10), "from: the first size must be at least 1 byte");
  EXPECT_EQ(message(100, 10, 2.0, 10), "to (10B) is smaller than from (100B)");
  EXPECT_EQ(message(1, 10, 1.0, 10), "by must be a finite number greater than 1, not 1");
  EXPECT_EQ(
      message(1, 1024, 2.0, 3),
      "the sizes: the sweep from 1B to 1K has more than at most 3 sizes; narrow it, or raise at most if you "
      "mean it");
}

TEST(SizeSweep, RefusesMoreSizesThanAllowedBeforeListingThem) {
  EXPECT_EQ(size_sweep(1, 10, 2.0, 1, kSweepFlags, 10).size(), 10U);
  EXPECT_THROW(size_sweep(1, 11, 2.0, 1, kSweepFlags, 10), InputError);
  // -b 1 -e 16E -i 1: 2^64 sizes (fuzz/regressions/params/)
  try {
    static_cast<void>(size_sweep(1, std::numeric_limits<std::uint64_t>::max(), 2.0, 1, kSweepFlags, 10'000));
    ADD_FAILURE() << "a sweep of 2^64 sizes was listed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("more than --max-cases 10000 sizes"), std::string::npos) << e.what();
  }
}

TEST(GbPerSecond, IsDecimal) {
  EXPECT_DOUBLE_EQ(gb_per_s(2e9, 0.5), 4.0);
}

}  // namespace
}  // namespace memstress
