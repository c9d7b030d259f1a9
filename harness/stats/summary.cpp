#include "harness/stats/summary.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace memstress {

double quantile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) {
    return 0.0;
  }
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto lower = static_cast<std::size_t>(std::floor(position));
  const std::size_t upper = std::min(lower + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(lower);
  return sorted[lower] + (sorted[upper] - sorted[lower]) * fraction;
}

Summary summarize(std::span<const double> samples) {
  Summary s;
  s.n = samples.size();
  if (samples.empty()) {
    return s;
  }
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  s.min = sorted.front();
  s.max = sorted.back();
  s.median = quantile_sorted(sorted, 0.5);
  s.p10 = quantile_sorted(sorted, 0.1);
  s.p90 = quantile_sorted(sorted, 0.9);
  s.p99 = quantile_sorted(sorted, 0.99);
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(s.n);
  if (s.n > 1) {
    double sq = 0.0;
    for (const double x : sorted) {
      sq += (x - s.mean) * (x - s.mean);
    }
    s.stddev = std::sqrt(sq / static_cast<double>(s.n - 1));
  }
  s.cv = s.mean != 0.0 ? s.stddev / std::abs(s.mean) : 0.0;
  return s;
}

}  // namespace memstress
