// The Mann-Whitney U test against values worked out by hand and by SciPy 1.17
// (scipy.stats.mannwhitneyu with method="exact" / "asymptotic"; scipy.stats.permutation_test for the
// exact test with ties), quoted to SciPy's printed precision.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "harness/stats/mann_whitney.hpp"

namespace memstress {
namespace {

using Values = std::vector<double>;

TEST(MannWhitney, TwoAgainstTwoByHand) {
  // Six equally likely splits of {1, 2, 3, 4} into two pairs; only {1, 2} gives U = 0: P = 1/6, two-sided
  // 2/6.
  const MannWhitneyResult r = mann_whitney_u(Values{1, 2}, Values{3, 4});
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.u, 0.0);
  EXPECT_DOUBLE_EQ(r.p_value, 1.0 / 3.0);
}

TEST(MannWhitney, FiveAgainstFiveWhollyApartIsTwoIn252) {
  const Values base{100, 101, 99, 102, 98};
  const Values slower{120, 121, 119, 122, 118};
  const MannWhitneyResult r = mann_whitney_u(base, slower);
  EXPECT_DOUBLE_EQ(r.u, 0.0);
  EXPECT_NEAR(r.p_value, 0.007936507936507936, 1e-15);  // 2 / C(10, 5)
  const MannWhitneyResult swapped = mann_whitney_u(slower, base);
  EXPECT_DOUBLE_EQ(swapped.u, 25.0);
  EXPECT_NEAR(swapped.p_value, r.p_value, 1e-15);
}

TEST(MannWhitney, ExactWithoutTiesMatchesSciPy) {
  const MannWhitneyResult overlap =
      mann_whitney_u(Values{1.1, 2.3, 3.5, 4.2, 5.9}, Values{2.0, 6.1, 7.3, 8.4, 9.9});
  EXPECT_DOUBLE_EQ(overlap.u, 4.0);
  EXPECT_NEAR(overlap.p_value, 0.09523809523809523, 1e-14);

  const MannWhitneyResult unequal =
      mann_whitney_u(Values{0.5, 0.9, 1.3}, Values{0.7, 1.1, 1.5, 1.6, 2.0, 2.2, 2.4});
  EXPECT_DOUBLE_EQ(unequal.u, 3.0);
  EXPECT_NEAR(unequal.p_value, 0.11666666666666667, 1e-14);

  // 20 against 20 (the largest exact case): counts up to C(40, 20).
  Values a;
  Values shifted;
  Values interleaved;
  for (int i = 1; i <= 20; ++i) {
    a.push_back(i);
    shifted.push_back(i + 6.5);
    interleaved.push_back(i + 0.5);
  }
  const MannWhitneyResult far = mann_whitney_u(a, shifted);
  EXPECT_TRUE(far.exact);
  EXPECT_DOUBLE_EQ(far.u, 91.0);
  EXPECT_NEAR(far.p_value, 0.0026426305915593523, 1e-13);
  const MannWhitneyResult near = mann_whitney_u(a, interleaved);
  EXPECT_DOUBLE_EQ(near.u, 190.0);
  EXPECT_NEAR(near.p_value, 0.799407187161697, 1e-13);
}

TEST(MannWhitney, ExactWithTiesIsThePermutationTest) {
  // Midranks: 1 -> 1, the three 2s -> 3, the four 3s -> 6.5, the two 4s -> 9.5, 5 -> 11.
  const MannWhitneyResult r = mann_whitney_u(Values{1, 2, 2, 3, 3, 3}, Values{2, 3, 4, 4, 5});
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.u, 5.5);
  EXPECT_NEAR(r.p_value, 0.11255411255411256, 1e-14);
}

TEST(MannWhitney, NormalApproximationWithTieCorrectionMatchesSciPy) {
  const Values x{11, 7, 8, 10, 6, 9, 10, 2, 0, 3, 3, 10, 10, 0, 5,
                 9,  1, 9, 1,  5, 9, 3,  4, 3, 8, 3, 11, 5,  5, 6};
  const Values y{8, 8, 8, 13, 11, 11, 10, 9,  6,  13, 7, 4, 12, 3, 12, 9, 3, 2,
                 7, 2, 3, 8,  13, 7,  11, 13, 11, 9,  7, 8, 5,  7, 6,  4, 13};
  const MannWhitneyResult ties = mann_whitney_u(x, y);
  EXPECT_FALSE(ties.exact);
  EXPECT_DOUBLE_EQ(ties.u, 352.0);
  EXPECT_NEAR(ties.p_value, 0.022691502107458083, 1e-12);

  Values a;
  Values b;
  for (int i = 1; i <= 25; ++i) {
    a.push_back(i);
    b.push_back(i + 0.5);
  }
  const MannWhitneyResult no_ties = mann_whitney_u(a, b);
  EXPECT_FALSE(no_ties.exact);
  EXPECT_DOUBLE_EQ(no_ties.u, 300.0);
  EXPECT_NEAR(no_ties.p_value, 0.8158901548607471, 1e-12);
}

TEST(MannWhitney, IdenticalSamplesCannotBeToldApart) {
  const Values s{0.145, 0.171, 0.141, 0.139, 0.152};
  EXPECT_DOUBLE_EQ(mann_whitney_u(s, s).p_value, 1.0);
  EXPECT_DOUBLE_EQ(mann_whitney_u(Values(5, 0.0), Values(5, 0.0)).p_value, 1.0);
  EXPECT_DOUBLE_EQ(mann_whitney_u(Values(80, 3.0), Values(80, 3.0)).p_value, 1.0);  // normal branch
}

TEST(MannWhitney, RejectsEmptyAndNaN) {
  EXPECT_THROW(static_cast<void>(mann_whitney_u(Values{}, Values{1})), std::invalid_argument);
  EXPECT_THROW(
      static_cast<void>(mann_whitney_u(Values{1, std::numeric_limits<double>::quiet_NaN()}, Values{1})),
      std::invalid_argument);
}

}  // namespace
}  // namespace memstress
