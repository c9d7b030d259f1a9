#include "suites/support/leak_growth.hpp"

#include <algorithm>
#include <numeric>

namespace memstress::suites {

Growth fit_growth(std::span<const double> allocated) {
  const std::size_t n = allocated.size();
  if (n < 2) {
    return {};
  }
  const double mean_x = static_cast<double>(n - 1) / 2;
  const double mean_y = std::accumulate(allocated.begin(), allocated.end(), 0.0) / static_cast<double>(n);
  double sxx = 0;
  double sxy = 0;
  double syy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double dx = static_cast<double>(i) - mean_x;
    const double dy = allocated[i] - mean_y;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  Growth g;
  g.bytes_per_epoch = sxy / sxx;
  g.r2 = syy > 0 ? (sxy * sxy) / (sxx * syy) : 0;
  return g;
}

double growth_threshold(std::uint64_t per_epoch) noexcept {
  constexpr double kFloor = 1 << 20;
  constexpr double kShare = 0.005;
  return std::max(kFloor, kShare * static_cast<double>(per_epoch));
}

bool growth_flagged(const Growth& growth, std::uint64_t per_epoch) noexcept {
  constexpr double kMinR2 = 0.9;
  return growth.bytes_per_epoch > growth_threshold(per_epoch) && growth.r2 > kMinR2;
}

}  // namespace memstress::suites
