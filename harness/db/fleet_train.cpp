// `memstress db train`: a profile's floors from a fleet's distribution (Note [Floors from the fleet]).

#include "harness/db/fleet_train.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string_view>

#include "harness/accept/judge.hpp"
#include "harness/core/error.hpp"
#include "harness/db/outliers.hpp"

namespace memstress::db {
namespace {

// Whether a case label ("bytes=256M direction=h2d host=pinned") holds every `where` pair.
bool matches(const std::string& case_label, const std::vector<std::pair<std::string, std::string>>& where) {
  const std::string padded = " " + case_label + " ";
  return std::all_of(where.begin(), where.end(), [&](const auto& kv) {
    return padded.find(fmt::format(" {}={} ", kv.first, kv.second)) != std::string::npos;
  });
}

std::string pick_driver(const Profile& profile, const std::vector<MetricObservation>& observations,
                        const std::string& wanted, std::string_view what) {
  std::set<std::string> drivers;
  for (const MetricObservation& o : observations) {
    if (o.model == profile.gpu) {
      drivers.insert(o.driver);
    }
  }
  if (drivers.empty()) {
    throw InputError(
        fmt::format("the store holds no results of a {} (the GPU of profile {})", profile.gpu, profile.name));
  }
  const std::string listed = fmt::format("{}", fmt::join(drivers, ", "));
  if (wanted.empty() && drivers.size() > 1) {
    throw InputError(fmt::format("the store holds {} results under drivers {}: choose one with {}",
                                 profile.gpu, listed, what));
  }
  if (!wanted.empty() && drivers.count(wanted) == 0) {
    throw InputError(fmt::format("{} {}: the store holds {} results under drivers {} only", what, wanted,
                                 profile.gpu, listed));
  }
  return wanted.empty() ? *drivers.begin() : wanted;
}

struct Matched {
  std::map<int, std::map<std::string, std::vector<double>>> by_ranks;  // ranks -> GPU -> run medians
  bool higher_better = true;
  std::string unit;
};

Matched match(const AcceptCheck& check, const std::vector<MetricObservation>& observations,
              const std::string& model, const std::string& driver) {
  Matched m;
  for (const MetricObservation& o : observations) {
    if (o.model == model && o.driver == driver && o.workload == check.workload && o.metric == check.metric &&
        matches(o.case_label, check.where)) {
      m.by_ranks[o.concurrent_ranks][o.gpu_uuid].push_back(o.median);
      m.higher_better = o.better != Better::lower;
      m.unit = o.unit;
    }
  }
  return m;
}

}  // namespace

FleetTraining train_from_fleet(Profile& profile, const std::vector<MetricObservation>& observations,
                               const FleetTrainOptions& options) {
  FleetTraining out;
  out.driver = pick_driver(profile, observations, options.driver, options.driver_what);
  for (AcceptCheck& check : profile.checks) {
    if (!check.golden && (check.min || check.max)) {
      continue;  // an absolute bound (no error, no remap pending): nothing to learn from a fleet
    }
    const Matched m = match(check, observations, profile.gpu, out.driver);
    // The group of the most GPUs; among equals, the fewest ranks at once.
    const auto best =
        std::max_element(m.by_ranks.begin(), m.by_ranks.end(),
                         [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
    const std::size_t gpus = best == m.by_ranks.end() ? 0 : best->second.size();
    if (gpus < options.min_gpus) {
      out.untrained.push_back(
          {check.name, fmt::format("{} GPU(s) of {} under driver {} measured it (needs {})", gpus,
                                   profile.gpu, out.driver, options.min_gpus)});
      continue;
    }
    std::vector<double> values;
    for (const auto& [gpu, runs] : best->second) {
      values.push_back(median_of(runs));
    }
    const GroupSpread group = group_spread(values, options.relative_floor);
    FleetBound b{check.name, gpus, best->first, group.median, group.spread, 0, m.higher_better};
    b.bound = b.at_least ? b.median - options.k * b.spread : b.median + options.k * b.spread;
    if (b.at_least && !(b.bound > 0)) {
      out.untrained.push_back(
          {check.name, fmt::format("the fleet's spread leaves no floor above 0 (median {}, "
                                   "scaled MAD {})",
                                   with_unit(b.median, m.unit), with_unit(b.spread, m.unit))});
      continue;
    }
    check.golden.reset();
    (b.at_least ? check.min : check.max) = b.bound;
    check.source = fmt::format("fleet: median {} {} {} x {} (scaled MAD) over {} GPUs, driver {}{}",
                               with_unit(b.median, m.unit), b.at_least ? "-" : "+", options.k,
                               with_unit(b.spread, m.unit), gpus, out.driver,
                               b.ranks > 1 ? fmt::format(", {} ranks at once", b.ranks) : "");
    out.trained.push_back(b);
  }
  return out;
}

}  // namespace memstress::db
