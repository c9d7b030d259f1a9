// The rule of Note [Fleet outliers: median and MAD] (outliers.hpp).

#include "harness/db/outliers.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <unordered_map>

#include "harness/stats/summary.hpp"

namespace memstress::db {
namespace {

// What a row's observations share (everything but the metric), as one string written into `key` (reused:
// a fleet has a million observations).
void row_key(const MetricObservation& o, std::string& key) {
  key.clear();
  for (const std::string* part : {&o.workload, &o.case_label, &o.allocator, &o.model, &o.driver}) {
    key += *part;
    key += '\x1f';
  }
  key += std::to_string(o.concurrent_ranks);
}

// The metric of an observation: with its row's key, its group.
void metric_key(const MetricObservation& o, std::string& key) {
  key.assign(o.metric);
  key += '\x1f';
  key += o.unit;
  key += '\x1f';
  key += std::to_string(static_cast<int>(o.better));
}

}  // namespace

double median_of(std::vector<double> values) {
  // The stats library's median (quantile_sorted(sorted, 0.5), harness/stats/summary.hpp), to the bit, without
  // sorting: the element at the lower middle, and where the count is even the least of those above it, which
  // quantile_sorted would have read next (a fleet's groups are 100,000 GPUs; sorting each was most of a
  // query).
  if (values.size() < 2) {
    return quantile_sorted(values, 0.5);
  }
  const double position = 0.5 * static_cast<double>(values.size() - 1);
  const auto lower = static_cast<std::size_t>(std::floor(position));
  const auto at = values.begin() + static_cast<std::ptrdiff_t>(lower);
  std::nth_element(values.begin(), at, values.end());
  const double fraction = position - static_cast<double>(lower);
  if (fraction == 0) {
    return *at;
  }
  const double next = *std::min_element(at + 1, values.end());
  return *at + (next - *at) * fraction;
}

double scaled_mad(const std::vector<double>& values, double centre) {
  std::vector<double> apart;
  apart.reserve(values.size());
  for (const double v : values) {
    apart.push_back(std::abs(v - centre));
  }
  return kMadScale * median_of(std::move(apart));
}

GpuSummary summarize_runs(const std::vector<double>& medians) {
  GpuSummary out;
  out.runs = medians.size();
  if (medians.empty()) {
    return out;
  }
  out.median = median_of(medians);
  if (medians.size() >= 2) {
    out.scatter = scaled_mad(medians, out.median);
  }
  return out;
}

GroupSpread group_spread(const std::vector<double>& values, double relative_floor) {
  const double m = median_of(values);
  return {m, std::max(scaled_mad(values, m), relative_floor * std::abs(m))};
}

void OutlierAccumulator::add(const MetricObservation& o) {
  // A new row, or one that only claims to be the last (a row id is unique within one store: observations of
  // two stores fed to one accumulator may share ids, so the GPU is checked too, cheaply).
  if (row_ == nullptr || o.row_id == 0 || o.row_id != last_row_ || seen_[gpu_].uuid != o.gpu_uuid) {
    row_key(o, key_);
    row_ = &rows_[key_];
    const auto [at, added] = gpu_index_.try_emplace(o.gpu_uuid, static_cast<std::uint32_t>(seen_.size()));
    if (added) {
      seen_.push_back({o.gpu_uuid, o.host, o.pci_bus_id, o.started_at});
    } else if (Seen& s = seen_[at->second]; o.started_at >= s.started_at) {
      s.host = o.host;
      s.pci_bus_id = o.pci_bus_id;
      s.started_at = o.started_at;
    }
    gpu_ = at->second;
    last_row_ = o.row_id;
  }
  metric_key(o, key_);
  std::size_t group = groups_.size();
  for (const auto& [metric, at] : row_->by_metric) {
    if (metric == key_) {
      group = at;
      break;
    }
  }
  if (group == groups_.size()) {
    Measurement what;
    static_cast<MeasurementKey&>(what) = o;
    what.model = o.model;
    what.driver = o.driver;
    what.concurrent_ranks = o.concurrent_ranks;
    groups_.push_back({std::move(what), {}, {}});
    row_->by_metric.emplace_back(key_, group);
  }
  groups_[group].runs[gpu_].push_back(o.median);
}

void OutlierAccumulator::add(const Measurement& m, const Device& gpu, const GpuSummary& summary) {
  const auto [group, new_group] = by_measurement_.try_emplace(m.id, groups_.size());
  if (new_group) {
    groups_.push_back({m, {}, {}});
  }
  const auto [seen, new_gpu] = by_device_.try_emplace(gpu.id, static_cast<std::uint32_t>(seen_.size()));
  if (new_gpu) {
    seen_.push_back({gpu.uuid, gpu.host, gpu.pci_bus_id, gpu.seen_at});
  }
  groups_[group->second].summaries.emplace_back(seen->second, summary);
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
  report.gpus = seen_.size();
  for (const Group& group : groups_) {
    // Each GPU's value (the median of its runs) and the group's run-to-run scatter W (Note [Fleet outliers:
    // median and MAD], "A GPU's own uncertainty").
    std::vector<std::pair<std::uint32_t, GpuSummary>> members = group.summaries;
    for (const auto& [id, runs] : group.runs) {
      members.emplace_back(id, summarize_runs(runs));
    }
    if (members.size() < options.min_gpus) {
      ++report.groups_too_small;
      continue;
    }
    ++report.groups_judged;
    std::vector<double> values;
    std::vector<double> scatters;
    values.reserve(members.size());
    for (const auto& [id, summary] : members) {
      values.push_back(summary.median);
      if (summary.runs >= 2 && std::isfinite(summary.scatter)) {
        scatters.push_back(summary.scatter);
      }
    }
    const GroupSpread group_of_values = group_spread(values, options.relative_floor);
    const double m = group_of_values.median;
    const double spread = group_of_values.spread;
    if (!(spread > 0)) {
      continue;  // every GPU at exactly 0: nothing to tell apart
    }
    // W from enough GPUs, or none (the plain rule): from fewer, one noisy GPU could set it.
    const double scatter =
        scatters.size() >= std::max(kMinScatterGpus, options.min_gpus) ? median_of(scatters) : 0.0;
    const auto spread_of = [&](std::size_t runs) {
      const double error = kMedianErrorScale * scatter / std::sqrt(static_cast<double>(runs));
      return std::sqrt(spread * spread + error * error);
    };
    const Measurement& o = group.what;
    const double toward_worse = o.better == Better::higher ? -1.0 : 1.0;
    // How a GPU is judged (Note [Fleet outliers: median and MAD], "Two runs"): its median's distance beyond M
    // in the worse direction, in S widened by its standard error; a GPU of two runs by the distance of the
    // better of them (the median less half their gap), in S alone: both runs must lie beyond the cut, as the
    // median of two, their mean, is carried there by one run alone.
    struct Judged {
      double margin = 0;  // what the median's distance is lessened by: half the gap of two runs
      double spread = 0;
    };
    const auto judged = [&](const GpuSummary& summary) {
      if (summary.runs == 2 && std::isfinite(summary.scatter)) {
        return Judged{summary.scatter / kMadScale, spread};
      }
      return Judged{0.0, spread_of(summary.runs)};
    };
    if (options.keep_groups) {
      GroupValues kept{static_cast<const MeasurementKey&>(o),
                       o.model,
                       o.driver,
                       o.concurrent_ranks,
                       m,
                       spread,
                       scatter,
                       {}};
      std::size_t k = 0;
      for (const auto& [id, summary] : members) {
        const Seen& g = seen_[id];
        const Judged j = judged(summary);
        const double limit = m + toward_worse * (options.threshold * j.spread + j.margin);
        kept.gpus.push_back({g.uuid, g.host, g.pci_bus_id, values[k++], summary.runs, limit});
      }
      std::sort(kept.gpus.begin(), kept.gpus.end(),
                [](const GroupValues::Gpu& a, const GroupValues::Gpu& b) { return a.uuid < b.uuid; });
      report.groups.push_back(std::move(kept));
    }
    std::size_t i = 0;
    for (const auto& [id, summary] : members) {
      const Seen& g = seen_[id];
      const double v = values[i++];
      const Judged j = judged(summary);
      const double own = j.spread;
      const double score = (toward_worse * (v - m) - j.margin) / own;
      if (score <= options.threshold) {
        continue;
      }
      Outlier out;
      static_cast<MeasurementKey&>(out) = o;
      out.model = o.model;
      out.driver = o.driver;
      out.host = g.host;
      out.gpu_uuid = g.uuid;
      out.pci_bus_id = g.pci_bus_id;
      out.value = v;
      out.group_median = m;
      out.spread = own;
      out.score = score;
      out.runs = summary.runs;
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
