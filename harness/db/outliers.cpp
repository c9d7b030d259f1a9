// The rule of Note [Fleet outliers: median and MAD] (outliers.hpp).

#include "harness/db/outliers.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

namespace memstress::db {
namespace {

using GroupKey = std::tuple<std::string, std::string, std::string, std::string, std::string, int, std::string,
                            std::string, int>;

GroupKey group_key(const MetricObservation& o) {
  return {o.workload, o.case_label, o.allocator,       o.metric, o.unit, static_cast<int>(o.better),
          o.model,    o.driver,     o.concurrent_ranks};
}

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

struct GpuValues {
  const MetricObservation* last = nullptr;  // host and bus id as last seen
  std::vector<double> medians;
};

}  // namespace

OutlierReport find_outliers(const std::vector<MetricObservation>& observations,
                            const OutlierOptions& options) {
  std::map<GroupKey, std::map<std::string, GpuValues>> groups;
  std::set<std::string> gpus;
  for (const MetricObservation& o : observations) {
    GpuValues& g = groups[group_key(o)][o.gpu_uuid];
    if (g.last == nullptr || o.started_at >= g.last->started_at) {
      g.last = &o;
    }
    g.medians.push_back(o.median);
    gpus.insert(o.gpu_uuid);
  }
  OutlierReport report;
  report.gpus = gpus.size();
  for (const auto& [key, members] : groups) {
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
    std::size_t i = 0;
    for (const auto& [uuid, g] : members) {
      const double v = values[i++];
      const MetricObservation& o = *g.last;
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
      out.host = o.host;
      out.gpu_uuid = uuid;
      out.pci_bus_id = o.pci_bus_id;
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
  std::stable_sort(report.outliers.begin(), report.outliers.end(),
                   [](const Outlier& a, const Outlier& b) { return a.score > b.score; });
  return report;
}

}  // namespace memstress::db
