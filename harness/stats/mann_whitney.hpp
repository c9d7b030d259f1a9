#pragma once

// Note [Mann-Whitney U]
// ~~~~~~~~~~~~~~~~~~~~
// The two-sided Mann-Whitney U (Wilcoxon rank-sum) test: do the samples of A and B come from the same
// distribution, or does one tend to be larger? It uses ranks only, so it is not thrown by the outliers
// GPU timings have (a first allocation that maps pages, a clock that had not ramped up), and assumes no
// distribution; that is why `memstress compare` uses it on the repetitions of a metric.
//
// U counts the pairs (a, b) with a > b, ties counting one half: U = R_A - n_A (n_A + 1) / 2, where R_A is
// the sum of A's ranks in the pooled samples and tied values share the mean of their ranks (midranks).
// Under the null hypothesis every split of the pooled values into n_A and n_B is equally likely.
//
// The p-value, two-sided: 2 min(P(U <= u), P(U >= u)), capped at 1.
// - Exact when n_A + n_B <= kExactLimit (40): the distribution of U over all C(n_A + n_B, n_A) splits of
//   the pooled midranks, counted by dynamic programming over the rank sum (in half ranks, so midranks stay
//   integers). With ties this is the exact conditional (permutation) test; without ties it equals the
//   classic exact distribution (SciPy's method="exact"). Repetitions are few (5 by default), and there
//   the normal approximation is poor: 5 against 5 wholly apart is p = 2/252 = 0.0079 exactly, but 0.012
//   by the approximation.
// - Otherwise the normal approximation with tie correction and continuity correction, as SciPy's
//   method="asymptotic": z = (max(U, n_A n_B - U) - n_A n_B / 2 - 1/2) / sigma,
//   sigma^2 = n_A n_B / 12 ((N + 1) - sum(t^3 - t) / (N (N - 1))) over tie groups of size t.
// When every value is the same (sigma = 0) nothing can be told apart: p = 1.
//
// tests/unit/test_mann_whitney.cpp checks both against SciPy 1.17 (mannwhitneyu, permutation_test).

#include <cstddef>
#include <span>

namespace memstress {

struct MannWhitneyResult {
  double u = 0;        // U of the first sample (pairs a > b, ties one half)
  double p_value = 1;  // two-sided
  bool exact = false;  // exact distribution (true) or normal approximation
};

inline constexpr std::size_t kExactLimit = 40;  // n_A + n_B up to this: exact

// Both samples need at least one value; NaNs are not allowed (std::invalid_argument).
MannWhitneyResult mann_whitney_u(std::span<const double> a, std::span<const double> b);

}  // namespace memstress
