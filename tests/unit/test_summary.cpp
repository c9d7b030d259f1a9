#include <gtest/gtest.h>

#include <vector>

#include "harness/stats/summary.hpp"

namespace memstress {
namespace {

TEST(Summary, MatchesNumpyLinearPercentiles) {
  const std::vector<double> v{5, 1, 4, 2, 3};
  const Summary s = summarize(v);
  EXPECT_EQ(s.n, 5U);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.p10, 1.4);
  EXPECT_DOUBLE_EQ(s.p90, 4.6);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_NEAR(s.stddev, 1.5811388300841898, 1e-12);
  EXPECT_NEAR(s.cv, 0.5270462766947299, 1e-12);
}

TEST(Summary, EvenCountMedianAndSingleSample) {
  EXPECT_DOUBLE_EQ(summarize(std::vector<double>{1, 2, 3, 4}).median, 2.5);
  const Summary one = summarize(std::vector<double>{7});
  EXPECT_DOUBLE_EQ(one.median, 7);
  EXPECT_DOUBLE_EQ(one.stddev, 0);
  EXPECT_EQ(summarize(std::vector<double>{}).n, 0U);
}

}  // namespace
}  // namespace memstress
