#include "harness/doctor/growth.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace memstress::doctor {
namespace {

constexpr std::size_t kMinFloors = 4;
constexpr double kRisingShare = 0.8;
// Note [Steps are what repeats].
constexpr double kRepeatShare = 0.9;    // of a loop's requests, repeated a period later
constexpr double kLoopShare = 0.5;      // of the walk's requests, in the loop
constexpr double kSampleShare = 0.8;    // samples of both middle quarters below this rule a period out
constexpr std::size_t kSample = 512;    // requests compared in each middle quarter before the loop is sought
constexpr std::size_t kDipsRead = 256;  // dips (or times a request is asked) around the middle of the walk
constexpr std::size_t kDipsApart = 64;  // distances between dips up to this many dips apart
constexpr std::size_t kRarest = 8;      // the walk's rarest requests (asked a loop's times at least)
constexpr std::size_t kApart = 4;       // distances between the times one is asked, up to this many apart
constexpr double kGivenBack = 0.05;     // a step keeps at most this share of its rise (median, either way)
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

// The share of `count` requests i in [from, to), spread over it, that request i + period repeats.
double sampled_share(const std::vector<StepToken>& tokens, std::size_t period, std::size_t from,
                     std::size_t to, std::size_t count) {
  const std::size_t span = to > from ? to - from : 0;
  count = std::min(count, span);
  std::size_t same = 0;
  for (std::size_t k = 0; k < count; ++k) {
    // Spread by a multiplicative step, not a fixed stride, which could fall on one phase of every step.
    const std::size_t i =
        count == span ? from + k : from + static_cast<std::size_t>((k * 2654435761ULL) % span);
    same += tokens[i] == tokens[i + period] ? 1U : 0U;
  }
  return count == 0 ? 0.0 : static_cast<double>(same) / static_cast<double>(count);
}

// Whether a loop at `period` may be there: a loop of half the walk holds one of its two middle quarters
// whole, so a sample of one of them repeats (as much as the loop must, less the sample's slack).
bool may_repeat(const std::vector<StepToken>& tokens, std::size_t period) {
  const std::size_t n = tokens.size();
  const std::size_t last = n - period;  // the requests that have one a period later
  return std::max(sampled_share(tokens, period, n / 4, std::min(n / 2, last), kSample),
                  sampled_share(tokens, period, n / 2, std::min(3 * n / 4, last), kSample)) >= kSampleShare;
}

// The distances from each of the kDipsRead positions around the middle of `at` (ascending) to the next
// `apart` ones, within the window or past it: candidates for a step's length.
void add_distances(const std::vector<std::size_t>& at, std::size_t apart, std::vector<std::size_t>& out) {
  const std::size_t from = at.size() > kDipsRead ? (at.size() - kDipsRead) / 2 : 0;
  const std::size_t to = std::min(at.size(), from + kDipsRead);
  for (std::size_t a = from; a < to; ++a) {
    for (std::size_t b = a + 1; b < std::min(at.size(), a + 1 + apart); ++b) {
      out.push_back(at[b] - at[a]);
    }
  }
}

struct TokenHash {
  std::size_t operator()(const StepToken& t) const noexcept {
    return std::hash<std::uint64_t>{}(t.bytes * 4 + static_cast<std::uint64_t>(t.action));
  }
};

struct Loop {
  std::size_t begin = 0;  // [begin, end): requests
  std::size_t end = 0;
};

// The loop at `period`: from the first request whose next `period` requests the period after repeats
// (kRepeatShare of them) to the last such, and the period after it. None unless it spans kMinFloors + 1
// periods and kLoopShare of the walk, and kRepeatShare of its requests are repeated a period later.
std::optional<Loop> loop_at(const std::vector<StepToken>& tokens, std::size_t period) {
  const std::size_t n = tokens.size();
  std::vector<std::size_t> same(n - period + 1,
                                0);  // same[i]: requests j < i that request j + period repeats
  for (std::size_t i = 0; i + period < n; ++i) {
    same[i + 1] = same[i] + (tokens[i] == tokens[i + period] ? 1U : 0U);
  }
  const auto share = [&](std::size_t from, std::size_t to) {
    return static_cast<double>(same[to] - same[from]) / static_cast<double>(to - from);
  };
  std::size_t begin = 0;
  while (begin + 2 * period <= n && share(begin, begin + period) < kRepeatShare) {
    ++begin;
  }
  if (begin + 2 * period > n) {
    return std::nullopt;
  }
  std::size_t last = n - 2 * period;
  while (last > begin && share(last, last + period) < kRepeatShare) {
    --last;
  }
  const Loop loop{begin, last + 2 * period};
  const std::size_t length = loop.end - loop.begin;
  if (length < (kMinFloors + 1) * period ||
      static_cast<double>(length) < kLoopShare * static_cast<double>(n) ||
      share(begin, last + period) < kRepeatShare) {
    return std::nullopt;
  }
  return loop;
}

// One floor between each two steps of the loop: the lowest live bytes within half a period of the same phase
// of every step, that of the loop's first lowest point.
std::vector<Floor> floors_of(const std::vector<std::int64_t>& live, const Loop& loop, std::size_t period) {
  const auto lowest = [&](std::size_t from, std::size_t to) {
    return static_cast<std::size_t>(std::min_element(live.begin() + static_cast<std::ptrdiff_t>(from),
                                                     live.begin() + static_cast<std::ptrdiff_t>(to)) -
                                    live.begin());
  };
  std::vector<Floor> floors;
  // Windows [centre - P/2, centre + P - P/2): they tile the loop, and only whole ones count.
  for (std::size_t centre = lowest(loop.begin, loop.begin + period); centre + period - period / 2 <= loop.end;
       centre += period) {
    if (centre >= loop.begin + period / 2) {
      const std::size_t at = lowest(centre - period / 2, centre + period - period / 2);
      floors.push_back(Floor{at, live[at]});
    }
  }
  return floors;
}

// The median of what a step keeps (floor to floor) and of its rise above the floor it began on.
std::pair<double, double> kept_and_rise(const std::vector<std::int64_t>& live,
                                        const std::vector<Floor>& floors) {
  std::vector<double> kept;
  std::vector<double> rise;
  for (std::size_t k = 0; k + 1 < floors.size(); ++k) {
    const auto from = live.begin() + static_cast<std::ptrdiff_t>(floors[k].position);
    const auto to = live.begin() + static_cast<std::ptrdiff_t>(floors[k + 1].position);
    kept.push_back(static_cast<double>(floors[k + 1].bytes - floors[k].bytes));
    rise.push_back(static_cast<double>(*std::max_element(from, to + 1) - floors[k].bytes));
  }
  return kept.empty() ? std::pair(0.0, 0.0) : std::pair(median(kept), median(rise));
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

Steps find_steps(const std::vector<std::int64_t>& live, const std::vector<StepToken>& tokens) {
  const std::size_t n = tokens.size();
  if (live.size() != n) {
    return {};
  }
  std::vector<std::size_t> candidates;
  for (const double swing : kSwings) {
    std::vector<std::size_t> dips;
    for (const Floor& f : find_floors(live, swing)) {
      dips.push_back(f.position);
    }
    add_distances(dips, kDipsApart, candidates);
  }
  // And the distances between the next few times the walk's rarest requests are asked, whatever the range (a
  // model's weights can make a step's swing a hair of it): a request a loop asks once a step (its loss, the
  // optimizer's step) is among them, where a layer's are asked once a layer.
  std::unordered_map<StepToken, std::size_t, TokenHash> asked;
  for (const StepToken& t : tokens) {
    ++asked[t];
  }
  std::vector<std::pair<std::size_t, StepToken>> rare;  // (times asked, the request), at least a loop's times
  for (const auto& [token, times] : asked) {
    if (times > kMinFloors) {
      rare.emplace_back(times, token);
    }
  }
  const auto by_times = [](const auto& x, const auto& y) {
    return std::tie(x.first, x.second.bytes, x.second.action) <
           std::tie(y.first, y.second.bytes, y.second.action);
  };
  std::sort(rare.begin(), rare.end(), by_times);
  rare.resize(std::min(rare.size(), kRarest));
  std::unordered_map<StepToken, std::vector<std::size_t>, TokenHash> asked_at;
  for (const auto& [times, token] : rare) {
    asked_at[token].reserve(times);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (const auto it = asked_at.find(tokens[i]); it != asked_at.end()) {
      it->second.push_back(i);
    }
  }
  for (const auto& [token, at] : asked_at) {
    add_distances(at, kApart, candidates);
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  std::optional<Steps> keeping;  // the first period whose repeats keep too much of what they take
  for (const std::size_t period : candidates) {
    if (period < 2) {
      continue;
    }
    if ((kMinFloors + 1) * period > n) {
      break;
    }
    if (!may_repeat(tokens, period)) {
      continue;
    }
    const std::optional<Loop> loop = loop_at(tokens, period);
    if (!loop) {
      continue;
    }
    std::vector<Floor> floors = floors_of(live, *loop, period);
    if (floors.size() < kMinFloors) {
      continue;
    }
    const auto [kept, rise] = kept_and_rise(live, floors);
    if (rise > 0 && std::abs(kept) <= kGivenBack * rise) {
      return Steps{StepsVerdict::steps, period, std::move(floors), kept, rise, loop->end};
    }
    if (!keeping) {
      keeping = Steps{StepsVerdict::keeps_much, period, std::move(floors), kept, rise, loop->end};
    }
  }
  return keeping.value_or(Steps{});
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
