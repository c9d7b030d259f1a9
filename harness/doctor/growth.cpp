#include "harness/doctor/growth.hpp"

#include <algorithm>
#include <array>
#include <map>

namespace memstress::doctor {
namespace {

constexpr std::size_t kMinFloors = 4;
constexpr double kRisingShare = 0.8;
// Note [Steps are what repeats].
constexpr double kRepeatShare = 0.9;    // of the walk's events from the second step on
constexpr double kSampleSlack = 0.1;    // a sample this far below kRepeatShare rules a candidate out
constexpr std::size_t kSample = 1024;   // events compared before the whole walk is
constexpr std::size_t kDipsRead = 256;  // dips around the middle of the walk, per swing
constexpr std::size_t kDipsApart = 64;  // distances between dips up to this many dips apart
constexpr double kGivenBack = 0.5;      // a step keeps at most this share of its rise (median)
constexpr std::array kSwings{0.25, 0.1, 0.04, 0.01};

double median(std::vector<double>& values) {
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) {
    return upper;
  }
  return (*std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid)) + upper) / 2;
}

// The share of the events i from the second step on that event i + period repeats, over `count` of them
// spread over the walk (all of them where count is at least their number).
double repeated_share(const std::vector<StepToken>& tokens, std::size_t period, std::size_t count) {
  const std::size_t span = tokens.size() - 2 * period;
  std::size_t same = 0;
  if (count >= span) {
    for (std::size_t i = period; i < period + span; ++i) {
      same += tokens[i] == tokens[i + period] ? 1U : 0U;
    }
    return static_cast<double>(same) / static_cast<double>(span);
  }
  // Spread by a multiplicative step, not a fixed stride, which could fall on one phase of every step.
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t i = period + static_cast<std::size_t>((k * 2654435761ULL) % span);
    same += tokens[i] == tokens[i + period] ? 1U : 0U;
  }
  return static_cast<double>(same) / static_cast<double>(count);
}

// Whether the steps give back most of what they take: the median step keeps at most half its median rise
// above the floor it began on. A forward pass's layers keep their activations and fail it.
bool gives_back(const std::vector<std::int64_t>& live, const std::vector<Floor>& floors) {
  std::vector<double> kept;
  std::vector<double> rise;
  for (std::size_t k = 0; k + 1 < floors.size(); ++k) {
    const auto from = live.begin() + static_cast<std::ptrdiff_t>(floors[k].position);
    const auto to = live.begin() + static_cast<std::ptrdiff_t>(floors[k + 1].position);
    kept.push_back(static_cast<double>(floors[k + 1].bytes - floors[k].bytes));
    rise.push_back(static_cast<double>(*std::max_element(from, to + 1) - floors[k].bytes));
  }
  if (kept.empty()) {
    return false;
  }
  const double median_rise = median(rise);
  return median_rise > 0 && median(kept) <= kGivenBack * median_rise;
}

bool repeats(const std::vector<StepToken>& tokens, std::size_t period) {
  if (period < 2 || tokens.size() < kMinFloors * period) {
    return false;
  }
  return repeated_share(tokens, period, kSample) >= kRepeatShare - kSampleSlack &&
         repeated_share(tokens, period, tokens.size()) >= kRepeatShare;
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

std::optional<std::size_t> step_period(const std::vector<std::int64_t>& live,
                                       const std::vector<StepToken>& tokens) {
  if (tokens.size() != live.size()) {
    return std::nullopt;
  }
  std::vector<std::size_t> candidates;
  for (const double swing : kSwings) {
    const std::vector<Floor> dips = find_floors(live, swing);
    const std::size_t from = dips.size() > kDipsRead ? (dips.size() - kDipsRead) / 2 : 0;
    const std::size_t to = std::min(dips.size(), from + kDipsRead);
    for (std::size_t a = from; a < to; ++a) {
      for (std::size_t b = a + 1; b < std::min(to, a + 1 + kDipsApart); ++b) {
        candidates.push_back(dips[b].position - dips[a].position);
      }
    }
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  for (const std::size_t period : candidates) {
    if (repeats(tokens, period) && gives_back(live, step_floors(live, tokens, period))) {
      return period;
    }
  }
  return std::nullopt;
}

std::vector<Floor> step_floors(const std::vector<std::int64_t>& live, const std::vector<StepToken>& tokens,
                               std::size_t period) {
  std::vector<Floor> floors;
  const std::size_t n = live.size();
  if (period == 0 || tokens.size() != n || n < 2 * period) {
    return floors;
  }
  // The loop: from the first step whose events the next step repeats (kRepeatShare of them) to the last such
  // step's successor. What comes before (building the model) and after it is no step.
  std::vector<std::size_t> same(n - period + 1, 0);  // same[i]: events j < i that event j + period repeats
  for (std::size_t i = 0; i + period < n; ++i) {
    same[i + 1] = same[i] + (tokens[i] == tokens[i + period] ? 1U : 0U);
  }
  const auto alike = [&](std::size_t i) {
    return static_cast<double>(same[i + period] - same[i]) >= kRepeatShare * static_cast<double>(period);
  };
  std::size_t begin = 0;
  while (begin + 2 * period <= n && !alike(begin)) {
    ++begin;
  }
  if (begin + 2 * period > n) {
    return floors;
  }
  std::size_t last = n - 2 * period;
  while (last > begin && !alike(last)) {
    --last;
  }
  const std::size_t end = last + 2 * period;
  const auto lowest = [&](std::size_t from, std::size_t to) {
    return static_cast<std::size_t>(std::min_element(live.begin() + static_cast<std::ptrdiff_t>(from),
                                                     live.begin() + static_cast<std::ptrdiff_t>(to)) -
                                    live.begin());
  };
  // Windows [centre - P/2, centre + P - P/2) around the phase of the first step's lowest point: they tile the
  // loop, and only whole ones count.
  const std::size_t phase = lowest(begin, begin + period);
  for (std::size_t centre = phase; centre + period - period / 2 <= end; centre += period) {
    if (centre < begin + period / 2) {
      continue;
    }
    const std::size_t at = lowest(centre - period / 2, centre + period - period / 2);
    floors.push_back(Floor{at, live[at]});
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
    const auto y = static_cast<double>(values[k]);
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
