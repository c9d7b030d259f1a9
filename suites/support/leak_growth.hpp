#pragma once

// The leak workload's growth test, apart so that it can be tested on synthetic series (see suites/leak.cpp).

#include <cstdint>
#include <span>

namespace memstress::suites {

// Least-squares line through (epoch index, allocated bytes after the epoch).
struct Growth {
  double bytes_per_epoch = 0;  // slope
  double r2 = 0;               // coefficient of determination; 0 when the series does not vary at all
};

Growth fit_growth(std::span<const double> allocated);

// Growth is a leak when the slope passes max(1 MiB, 0.5% of per_epoch) per epoch and the line explains
// the series (R² > 0.9): a steady climb, not a one-off step or noise.
double growth_threshold(std::uint64_t per_epoch) noexcept;
bool growth_flagged(const Growth& growth, std::uint64_t per_epoch) noexcept;

}  // namespace memstress::suites
