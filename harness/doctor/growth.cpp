#include "harness/doctor/growth.hpp"

#include <algorithm>
#include <map>

namespace memstress::doctor {
namespace {

constexpr std::size_t kMinFloors = 4;
constexpr double kRisingShare = 0.8;

double median(std::vector<double>& values) {
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) {
    return upper;
  }
  return (*std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid)) + upper) / 2;
}

}  // namespace

bool LineFit::growing() const noexcept {
  return points >= kMinFloors && slope > 0 &&
         static_cast<double>(rises) >= kRisingShare * static_cast<double>(points - 1);
}

std::vector<Floor> find_floors(const std::vector<std::int64_t>& live, double swing_fraction) {
  std::vector<Floor> floors;
  if (live.empty()) {
    return floors;
  }
  const auto [lo, hi] = std::minmax_element(live.begin(), live.end());
  const auto swing = static_cast<std::int64_t>(swing_fraction * static_cast<double>(*hi - *lo));
  if (swing <= 0) {
    return floors;
  }
  bool seeking_peak = true;
  std::size_t peak = 0;
  std::size_t trough = 0;
  for (std::size_t p = 0; p < live.size(); ++p) {
    if (seeking_peak) {
      if (live[p] > live[peak]) {
        peak = p;
      } else if (live[peak] - live[p] >= swing) {
        seeking_peak = false;
        trough = p;
      }
    } else if (live[p] < live[trough]) {
      trough = p;
    } else if (live[p] - live[trough] >= swing) {
      floors.push_back(Floor{trough, live[trough]});
      seeking_peak = true;
      peak = p;
    }
  }
  return floors;
}

LineFit fit_steps(const std::vector<std::int64_t>& values) {
  LineFit fit;
  fit.points = values.size();
  if (values.size() < 2) {
    return fit;
  }
  for (std::size_t k = 1; k < values.size(); ++k) {
    fit.rises += values[k] > values[k - 1] ? 1U : 0U;
  }
  // Every pair's slope; past 2,000 floors, the pairs of every s-th floor (about two million pairs).
  const std::size_t n = values.size();
  const std::size_t s = (n + 1999) / 2000;
  std::vector<double> slopes;
  for (std::size_t i = 0; i < n; i += s) {
    for (std::size_t j = i + s; j < n; j += s) {
      slopes.push_back(static_cast<double>(values[j] - values[i]) / static_cast<double>(j - i));
    }
  }
  if (slopes.empty()) {
    slopes.push_back(static_cast<double>(values[n - 1] - values[0]) / static_cast<double>(n - 1));
  }
  fit.slope = median(slopes);
  std::vector<double> offsets;
  offsets.reserve(n);
  double mean = 0;
  for (std::size_t k = 0; k < n; ++k) {
    offsets.push_back(static_cast<double>(values[k]) - fit.slope * static_cast<double>(k));
    mean += static_cast<double>(values[k]);
  }
  fit.intercept = median(offsets);
  mean /= static_cast<double>(n);
  double residual = 0;
  double total = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const double y = static_cast<double>(values[k]);
    const double r = y - (fit.intercept + fit.slope * static_cast<double>(k));
    residual += r * r;
    total += (y - mean) * (y - mean);
  }
  fit.r2 = total > 0 ? 1 - residual / total : (residual == 0 ? 1.0 : 0.0);
  return fit;
}

std::vector<SiteGrowth> growing_sites(const LiveWalk& walk, const std::vector<Floor>& floors) {
  std::vector<SiteGrowth> out;
  if (floors.size() < kMinFloors) {
    return out;
  }
  // Each interval is live at a contiguous run of floors: difference arrays per site.
  std::map<std::int32_t, std::vector<std::int64_t>> diff;
  const auto first_at_or_after = [&](std::size_t position) {
    return static_cast<std::size_t>(
        std::lower_bound(floors.begin(), floors.end(), position,
                         [](const Floor& f, std::size_t p) { return f.position < p; }) -
        floors.begin());
  };
  for (const Interval& interval : walk.intervals) {
    const std::size_t from = first_at_or_after(interval.begin);
    const std::size_t to =
        interval.end == Interval::kLiveAtEnd ? floors.size() : first_at_or_after(interval.end);
    if (from >= to) {
      continue;
    }
    std::vector<std::int64_t>& d = diff[interval.site];
    d.resize(floors.size() + 1, 0);
    d[from] += static_cast<std::int64_t>(interval.bytes);
    d[to] -= static_cast<std::int64_t>(interval.bytes);
  }
  for (const auto& [site, d] : diff) {
    std::vector<std::int64_t> series(floors.size());
    std::int64_t running = 0;
    for (std::size_t k = 0; k < floors.size(); ++k) {
      running += d[k];
      series[k] = running;
    }
    const LineFit fit = fit_steps(series);
    if (fit.growing()) {
      out.push_back(SiteGrowth{site, fit, series.front(), series.back()});
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const SiteGrowth& a, const SiteGrowth& b) { return a.fit.slope > b.fit.slope; });
  return out;
}

}  // namespace memstress::doctor
