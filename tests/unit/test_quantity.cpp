// Numbers for people (harness/run/quantity.hpp): one rule per unit family, 4 significant digits, no
// exponent.

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "harness/run/quantity.hpp"

namespace memstress {
namespace {

TEST(Quantity, NumbersHaveFourSignificantDigitsAndNoExponent) {
  EXPECT_EQ(format_number(3185.2), "3185");
  EXPECT_EQ(format_number(54.934), "54.93");
  EXPECT_EQ(format_number(0.012345), "0.01235");
  EXPECT_EQ(format_number(123456789.0), "123456789");
  EXPECT_EQ(format_number(4.397e4), "43970");
  EXPECT_EQ(format_number(0.0000123), "0.0000123");
  EXPECT_EQ(format_number(1.0), "1");
  EXPECT_EQ(format_number(0.99996), "1");
  EXPECT_EQ(format_number(-2.5), "-2.5");
  EXPECT_EQ(format_number(0.0), "0");
  EXPECT_EQ(format_number(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(format_number(-std::numeric_limits<double>::infinity()), "-inf");
}

TEST(Quantity, EachUnitFamilyHasOneHumanForm) {
  EXPECT_EQ(format_quantity(83846234112, "bytes"), "78.09 GiB");
  EXPECT_EQ(format_quantity(512, "bytes"), "512 B");
  EXPECT_EQ(format_quantity(0, "bytes"), "0 B");
  EXPECT_EQ(format_quantity(2048, "MiB"), "2 GiB");  // dataloader's peaks are recorded in MiB
  EXPECT_EQ(format_quantity(14008508, "bytes/epoch"), "13.36 MiB/epoch");
  EXPECT_EQ(format_quantity(0.195, "us"), "195 ns");
  EXPECT_EQ(format_quantity(12.34, "us"), "12.34 us");
  EXPECT_EQ(format_quantity(1500, "us"), "1.5 ms");
  EXPECT_EQ(format_quantity(6.6, "s"), "6.6 s");
  EXPECT_EQ(format_quantity(3185.2, "GB/s"), "3185 GB/s");  // always GB/s, as nccl-tests
  EXPECT_EQ(format_quantity(0.5, "GB/s"), "0.5 GB/s");
  EXPECT_EQ(format_quantity(4252100, "ops/s"), "4.252M ops/s");
  EXPECT_EQ(format_quantity(43970, "samples/s"), "43.97k samples/s");
  EXPECT_EQ(format_quantity(512, "ops/s"), "512 ops/s");
  EXPECT_EQ(format_quantity(0.125, "share"), "12.5%");
  EXPECT_EQ(format_quantity(1, "share of total"), "100%");
  EXPECT_EQ(format_quantity(37, "count"), "37");
  EXPECT_EQ(format_quantity(0.95123, "ratio"), "0.9512");
  EXPECT_EQ(format_quantity(1.5, "x operands"), "1.5 x operands");
}

TEST(Quantity, TheSpreadUsesTheScaleOfTheMedian) {
  const DisplayScale scale = display_scale(1.5 * 1024 * 1024 * 1024, "bytes");
  EXPECT_EQ(scale.unit, "GiB");
  EXPECT_EQ(format_scaled(512.0 * 1024 * 1024, scale), "0.5 GiB");
}

}  // namespace
}  // namespace memstress
