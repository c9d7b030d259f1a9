#include "harness/stats/mann_whitney.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <utility>
#include <vector>

namespace memstress {
namespace {

// The pooled samples ranked: twice the midrank of each value (A's first, then B's), and the sum of
// t^3 - t over tie groups for the variance's tie correction.
struct PooledRanks {
  std::vector<std::size_t> half_ranks;  // 2 x midrank: an integer even where ranks are shared
  double tie_term = 0;
};

PooledRanks rank_pooled(std::span<const double> a, std::span<const double> b) {
  const std::size_t n = a.size() + b.size();
  std::vector<std::pair<double, std::size_t>> order;
  order.reserve(n);
  for (std::size_t i = 0; i < a.size(); ++i) {
    order.emplace_back(a[i], i);
  }
  for (std::size_t i = 0; i < b.size(); ++i) {
    order.emplace_back(b[i], a.size() + i);
  }
  std::sort(order.begin(), order.end());
  PooledRanks ranks;
  ranks.half_ranks.resize(n);
  for (std::size_t first = 0; first < n;) {
    std::size_t last = first;
    while (last + 1 < n && order[last + 1].first == order[first].first) {
      ++last;
    }
    // Ranks first + 1 .. last + 1 share their mean; twice that is first + last + 2.
    for (std::size_t k = first; k <= last; ++k) {
      ranks.half_ranks[order[k].second] = first + last + 2;
    }
    const auto t = static_cast<double>(last - first + 1);
    ranks.tie_term += t * t * t - t;
    first = last + 1;
  }
  return ranks;
}

// P(S <= observed) and P(S >= observed) for S the sum of half ranks of n_a values drawn without
// replacement from the pooled half ranks: counts of subsets by size and sum, one value at a time.
std::pair<double, double> exact_tails(const std::vector<std::size_t>& half_ranks, std::size_t n_a,
                                      std::size_t observed) {
  const std::size_t max_sum = std::accumulate(half_ranks.begin(), half_ranks.end(), std::size_t{0});
  // ways[k * (max_sum + 1) + s]: subsets of k of the values seen so far with half-rank sum s. Counts
  // reach C(40, 20) ~ 1.4e11 at kExactLimit, exact in a double.
  const std::size_t stride = max_sum + 1;
  std::vector<double> ways((n_a + 1) * stride, 0.0);
  ways[0] = 1.0;
  for (const std::size_t r : half_ranks) {
    for (std::size_t k = n_a; k >= 1; --k) {
      for (std::size_t s = max_sum; s >= r; --s) {
        ways[k * stride + s] += ways[(k - 1) * stride + s - r];
      }
    }
  }
  double below = 0;
  double above = 0;
  double total = 0;
  for (std::size_t s = 0; s <= max_sum; ++s) {
    const double w = ways[n_a * stride + s];
    total += w;
    below += s <= observed ? w : 0.0;
    above += s >= observed ? w : 0.0;
  }
  return {below / total, above / total};
}

}  // namespace

MannWhitneyResult mann_whitney_u(std::span<const double> a, std::span<const double> b) {
  if (a.empty() || b.empty()) {
    throw std::invalid_argument("mann_whitney_u: both samples need at least one value");
  }
  const auto is_nan = [](double x) { return std::isnan(x); };
  if (std::any_of(a.begin(), a.end(), is_nan) || std::any_of(b.begin(), b.end(), is_nan)) {
    throw std::invalid_argument("mann_whitney_u: NaN in the samples");
  }
  const PooledRanks ranks = rank_pooled(a, b);
  const std::size_t observed =
      std::accumulate(ranks.half_ranks.begin(),
                      ranks.half_ranks.begin() + static_cast<std::ptrdiff_t>(a.size()), std::size_t{0});
  const auto na = static_cast<double>(a.size());
  const auto nb = static_cast<double>(b.size());
  const auto n = na + nb;

  MannWhitneyResult result;
  result.u = static_cast<double>(observed) / 2.0 - na * (na + 1.0) / 2.0;
  if (a.size() + b.size() <= kExactLimit) {
    const auto [below, above] = exact_tails(ranks.half_ranks, a.size(), observed);
    result.exact = true;
    result.p_value = std::min(1.0, 2.0 * std::min(below, above));
    return result;
  }
  const double mean = na * nb / 2.0;
  const double variance = na * nb / 12.0 * ((n + 1.0) - ranks.tie_term / (n * (n - 1.0)));
  if (variance <= 0) {
    result.p_value = 1.0;  // every value the same
    return result;
  }
  const double z = (std::max(result.u, na * nb - result.u) - mean - 0.5) / std::sqrt(variance);
  result.p_value = std::min(1.0, std::erfc(z / std::sqrt(2.0)));  // 2 x the upper tail of N(0, 1)
  return result;
}

}  // namespace memstress
