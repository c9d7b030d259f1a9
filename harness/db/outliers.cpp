// The rule of Note [Fleet outliers: median and MAD] (outliers.hpp).

#include "harness/db/outliers.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "harness/stats/summary.hpp"

namespace memstress::db {
namespace {

// The group of an observation as one string, written into `key` (reused: a fleet has a million
// observations, and a tuple of nine strings per observation was most of the query's time).
void group_key(const MetricObservation& o, std::string& key) {
  key.clear();
  for (const std::string* part :
       {&o.workload, &o.case_label, &o.allocator, &o.metric, &o.unit, &o.model, &o.driver}) {
    key += *part;
    key += '\x1f';
  }
  key += std::to_string(static_cast<int>(o.better));
  key += '\x1f';
  key += std::to_string(o.concurrent_ranks);
}

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return quantile_sorted(values, 0.5);  // the stats library's median (harness/stats/summary.hpp)
}

}  // namespace

void OutlierAccumulator::add(const MetricObservation& o) {
  group_key(o, key_);
  const auto [at, added] = index_.try_emplace(key_, groups_.size());
  if (added) {
    groups_.push_back({o, {}});
  }
  Gpu& g = groups_[at->second].gpus.try_emplace(o.gpu_uuid).first->second;
  if (g.medians.empty() || o.started_at >= g.started_at) {
    g.host = o.host;  // as last seen
    g.pci_bus_id = o.pci_bus_id;
    g.started_at = o.started_at;
  }
  g.medians.push_back(o.median);
  gpus_.insert(o.gpu_uuid);
}

OutlierReport find_outliers(const std::vector<MetricObservation>& observations,
                            const OutlierOptions& options) {
  OutlierAccumulator all;
  for (const MetricObservation& o : observations) {
    all.add(o);
  }
  return all.report(options);
}

OutlierReport OutlierAccumulator::report(const OutlierOptions& options) const {
  OutlierReport report;
  report.gpus = gpus_.size();
  for (const Group& group : groups_) {
    const auto& members = group.gpus;
    if (members.size() < options.min_gpus) {
      ++report.groups_too_small;
      continue;
    }
    ++report.groups_judged;
    std::vector<double> values;
    values.reserve(members.size());
    for (const auto& [uuid, g] : members) {
      values.push_back(median_of(g.medians));
    }
    const double m = median_of(values);
    std::vector<double> deviations;
    deviations.reserve(values.size());
    for (const double v : values) {
      deviations.push_back(std::abs(v - m));
    }
    const double spread = std::max(kMadScale * median_of(deviations), options.relative_floor * std::abs(m));
    if (!(spread > 0)) {
      continue;  // every GPU at exactly 0: nothing to tell apart
    }
    if (options.keep_groups) {
      const MetricObservation& o = group.first;
      GroupValues kept{o.workload, o.case_label, o.allocator,        o.metric, o.unit, o.model,
                       o.driver,   o.better,     o.concurrent_ranks, m,        spread, {}};
      std::size_t k = 0;
      for (const auto& [uuid, g] : members) {
        kept.gpus.push_back({uuid, g.host, g.pci_bus_id, values[k++]});
      }
      std::sort(kept.gpus.begin(), kept.gpus.end(),
                [](const GroupValues::Gpu& a, const GroupValues::Gpu& b) { return a.uuid < b.uuid; });
      report.groups.push_back(std::move(kept));
    }
    std::size_t i = 0;
    for (const auto& [uuid, g] : members) {
      const double v = values[i++];
      const MetricObservation& o = group.first;
      const double worse = o.better == Better::higher ? m - v : v - m;
      const double score = worse / spread;
      if (score <= options.threshold) {
        continue;
      }
      Outlier out;
      out.workload = o.workload;
      out.case_label = o.case_label;
      out.allocator = o.allocator;
      out.metric = o.metric;
      out.unit = o.unit;
      out.better = o.better;
      out.model = o.model;
      out.driver = o.driver;
      out.host = g.host;
      out.gpu_uuid = uuid;
      out.pci_bus_id = g.pci_bus_id;
      out.value = v;
      out.group_median = m;
      out.spread = spread;
      out.score = score;
      out.worse_pct = m != 0 ? std::abs(v - m) / std::abs(m) * 100 : 0;
      out.group_gpus = members.size();
      out.concurrent_ranks = o.concurrent_ranks;
      report.outliers.push_back(std::move(out));
    }
  }
  std::sort(report.groups.begin(), report.groups.end(), [](const GroupValues& a, const GroupValues& b) {
    return std::tie(a.workload, a.case_label, a.allocator, a.metric, a.unit, a.model, a.driver,
                    a.concurrent_ranks) < std::tie(b.workload, b.case_label, b.allocator, b.metric, b.unit,
                                                   b.model, b.driver, b.concurrent_ranks);
  });
  // Most distant first; ties in a fixed order (the groups were gathered in a hash table's).
  std::sort(report.outliers.begin(), report.outliers.end(), [](const Outlier& a, const Outlier& b) {
    return std::tie(b.score, a.workload, a.case_label, a.allocator, a.metric, a.unit, a.model, a.driver,
                    a.concurrent_ranks, a.gpu_uuid) < std::tie(a.score, b.workload, b.case_label, b.allocator,
                                                               b.metric, b.unit, b.model, b.driver,
                                                               b.concurrent_ranks, b.gpu_uuid);
  });
  return report;
}

}  // namespace memstress::db
