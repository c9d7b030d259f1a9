// A GPU's history and two drivers across the fleet (history.hpp).

#include "harness/db/history.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "harness/core/text_table.hpp"
#include "harness/db/outliers.hpp"
#include "harness/run/format.hpp"
#include "harness/run/quantity.hpp"
#include "harness/stats/summary.hpp"

namespace memstress::db {
namespace {

std::string better_words(Better better) {
  switch (better) {
    case Better::higher:
      return "higher is better";
    case Better::lower:
      return "lower is better";
    case Better::none:
      break;
  }
  return "not judged";
}

}  // namespace

std::vector<HistorySeries> history(const std::vector<MetricObservation>& observations) {
  using Key = std::tuple<std::string, std::string, std::string, std::string, std::string, int>;
  std::map<Key, HistorySeries> series;
  for (const MetricObservation& o : observations) {
    HistorySeries& s =
        series[{o.gpu_uuid, o.workload, o.case_label, o.allocator, o.metric, o.concurrent_ranks}];
    if (s.points.empty()) {
      s = {static_cast<const MeasurementKey&>(o),
           o.gpu_uuid,
           o.host,
           o.pci_bus_id,
           o.model,
           o.concurrent_ranks,
           {}};
    }
    if (!s.points.empty() && o.started_at >= s.points.back().started_at) {  // where the GPU was last seen
      s.host = o.host;
      s.pci_bus_id = o.pci_bus_id;
    }
    s.points.push_back({o.started_at, o.driver, {}, o.median});
  }
  std::vector<HistorySeries> out;
  out.reserve(series.size());
  for (auto& [key, s] : series) {
    std::stable_sort(s.points.begin(), s.points.end(), [](const HistoryPoint& a, const HistoryPoint& b) {
      return a.started_at < b.started_at;
    });
    for (std::size_t i = 1; i < s.points.size(); ++i) {
      if (s.points[i].driver != s.points[i - 1].driver) {
        s.points[i].previous_driver = s.points[i - 1].driver;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::string format_history_table(const std::vector<HistorySeries>& series) {
  std::string out;
  std::set<std::string> gpus;
  std::size_t changes = 0;
  for (const HistorySeries& s : series) {
    gpus.insert(s.gpu_uuid);
    // From files: shown through terminal_text, as render_table shows its cells.
    out += terminal_text(fmt::format("{} {} | {} | {} | {} ({}, {})", s.workload, s.case_label, s.allocator,
                                     s.metric, s.model, s.gpu_uuid,
                                     s.host.empty() ? "host unknown" : "host " + s.host));
    out += s.concurrent_ranks > 1 ? fmt::format(", {} ranks at once\n", s.concurrent_ranks) : "\n";
    std::vector<TableLine> lines{
        {"STARTED", "DRIVER", fmt::format("MEDIAN ({})", better_words(s.better)), "CHANGE", ""}};
    const HistoryPoint* previous = nullptr;
    for (const HistoryPoint& p : s.points) {
      std::string change = "-";
      if (previous != nullptr && previous->median != 0 && std::isfinite(previous->median)) {
        change = fmt::format("{:+.1f}%", (p.median / previous->median - 1) * 100);
      }
      std::string mark;
      if (!p.previous_driver.empty()) {
        mark = fmt::format("<- driver {} -> {}", p.previous_driver, p.driver);
        ++changes;
      }
      lines.push_back(
          {p.started_at, p.driver.empty() ? "-" : p.driver, format_quantity(p.median, s.unit), change, mark});
      previous = &p;
    }
    out += render_table(lines) + "\n";
  }
  out += fmt::format("{} series on {} GPU(s), {} driver change(s) marked\n", series.size(), gpus.size(),
                     changes);
  return out;
}

nlohmann::json history_json(const std::vector<HistorySeries>& series) {
  nlohmann::json list = nlohmann::json::array();
  for (const HistorySeries& s : series) {
    nlohmann::json points = nlohmann::json::array();
    for (const HistoryPoint& p : s.points) {
      points.push_back({{"started_at", p.started_at},
                        {"driver", p.driver},
                        {"driver_changed_from",
                         p.previous_driver.empty() ? nlohmann::json() : nlohmann::json(p.previous_driver)},
                        {"median", p.median}});
    }
    list.push_back({{"gpu_uuid", s.gpu_uuid},
                    {"host", s.host},
                    {"pci_bus_id", s.pci_bus_id},
                    {"model", s.model},
                    {"workload", s.workload},
                    {"case", s.case_label},
                    {"allocator", s.allocator},
                    {"metric", s.metric},
                    {"unit", s.unit},
                    {"better", to_string(s.better)},
                    {"concurrent_ranks", s.concurrent_ranks},
                    {"points", std::move(points)}});
  }
  return {{"schema", "memstress.history/1"}, {"series", std::move(list)}};
}

DriverComparison compare_drivers(const std::vector<MetricObservation>& observations, const std::string& base,
                                 const std::string& next, const compare::CompareOptions& options) {
  DriverAccumulator all(base, next);
  for (const MetricObservation& o : observations) {
    all.add(o);
  }
  return all.report(options);
}

DriverAccumulator::DriverAccumulator(std::string base, std::string next)
    : base_(std::move(base)), next_(std::move(next)) {}

DriverAccumulator::Group& DriverAccumulator::group(const MeasurementKey& what, const std::string& model,
                                                   int concurrent_ranks) {
  key_.clear();
  for (const std::string* part : {&what.workload, &what.case_label, &what.allocator, &what.metric, &model}) {
    key_ += *part;
    key_ += '\x1f';
  }
  key_ += std::to_string(concurrent_ranks);
  auto [at, added] = groups_.try_emplace(key_);
  if (added) {
    at->second.what = what;
    at->second.model = model;
    at->second.concurrent_ranks = concurrent_ranks;
  }
  return at->second;
}

void DriverAccumulator::add_value(Group& g, std::uint32_t gpu, const std::string& driver, double value) {
  g.values.push_back({gpu, driver != base_, value});
}

void DriverAccumulator::add(const MetricObservation& o) {
  if (o.driver != last_driver_) {  // runs come row by row: the driver changes rarely
    last_driver_ = o.driver;
    drivers_seen_.insert(o.driver);
  }
  if (o.driver != base_ && o.driver != next_) {
    return;
  }
  const auto [gpu, added] = gpu_index_.try_emplace(o.gpu_uuid, static_cast<std::uint32_t>(uuids_.size()));
  if (added) {
    uuids_.push_back(o.gpu_uuid);
  }
  add_value(group(o, o.model, o.concurrent_ranks), gpu->second, o.driver, o.median);
}

void DriverAccumulator::add(const Measurement& m, const Device& d, const GpuSummary& summary) {
  if (m.driver != last_driver_) {
    last_driver_ = m.driver;
    drivers_seen_.insert(m.driver);
  }
  if (m.driver != base_ && m.driver != next_) {
    return;
  }
  auto [g, new_measurement] = by_measurement_.try_emplace(m.id, nullptr);
  if (new_measurement) {
    g->second = &group(m, m.model, m.concurrent_ranks);
  }
  const auto [gpu, added] = by_device_.try_emplace(d.id, static_cast<std::uint32_t>(uuids_.size()));
  if (added) {
    uuids_.push_back(d.uuid);
  }
  add_value(*g->second, gpu->second, m.driver, summary.median);
}

DriverComparison DriverAccumulator::report(const compare::CompareOptions& options) const {
  // The measurements in their keys' order (they were gathered in a hash table).
  std::vector<const std::pair<const std::string, Group>*> ordered;
  for (const auto& entry : groups_) {
    ordered.push_back(&entry);
  }
  std::sort(ordered.begin(), ordered.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  const std::string& base = base_;
  const std::string& next = next_;
  DriverComparison out;
  out.base_driver = base;
  out.new_driver = next;
  out.options = options;
  std::vector<bool> both(uuids_.size(), false);
  for (const auto* entry : ordered) {
    const Group& g = entry->second;
    MetricResult a{g.what.metric, g.what.unit, g.what.better, {}, {}};
    MetricResult b = a;
    std::vector<double> ratios;
    // Each GPU's values under each driver, together: a GPU's base values, then its new ones.
    std::vector<Value> values = g.values;
    std::sort(values.begin(), values.end(), [](const Value& x, const Value& y) {
      return std::tie(x.gpu, x.next) < std::tie(y.gpu, y.next);
    });
    std::vector<double> under[2];
    for (std::size_t i = 0; i < values.size();) {
      const std::uint32_t gpu = values[i].gpu;
      under[0].clear();
      under[1].clear();
      for (; i < values.size() && values[i].gpu == gpu; ++i) {
        under[values[i].next ? 1 : 0].push_back(values[i].value);
      }
      if (under[0].empty() || under[1].empty()) {
        continue;
      }
      both[gpu] = true;
      const double va = median_of(under[0]);
      const double vb = median_of(under[1]);
      a.samples.push_back(va);
      b.samples.push_back(vb);
      if (va != 0) {
        ratios.push_back((vb / va - 1) * 100);
      }
    }
    if (a.samples.empty()) {
      ++out.groups_one_driver;
      continue;
    }
    a.summary = summarize(a.samples);
    b.summary = summarize(b.samples);
    DriverGroup d;
    static_cast<MeasurementKey&>(d) = g.what;
    d.model = g.model;
    d.concurrent_ranks = g.concurrent_ranks;
    d.gpus = a.samples.size();
    d.paired_change_pct = ratios.empty() ? std::nan("") : median_of(ratios);
    d.judged = compare::compare_metric(a, b, options);
    out.counts.add(d.judged.outcome);
    out.groups.push_back(std::move(d));
  }
  out.gpus_both = static_cast<std::size_t>(std::count(both.begin(), both.end(), true));
  // Worst first: WORSE, UNSURE, BETTER, SAME; within each, the largest change first.
  const auto rank = [](compare::Outcome o) {
    switch (o) {
      case compare::Outcome::worse:
        return 0;
      case compare::Outcome::unsure:
        return 1;
      case compare::Outcome::better:
        return 2;
      default:
        return 3;
    }
  };
  std::stable_sort(out.groups.begin(), out.groups.end(), [&](const DriverGroup& x, const DriverGroup& y) {
    const double cx = std::abs(x.judged.change_pct.value_or(0));
    const double cy = std::abs(y.judged.change_pct.value_or(0));
    return std::pair(rank(x.judged.outcome), -cx) < std::pair(rank(y.judged.outcome), -cy);
  });
  return out;
}

std::string format_driver_table(const DriverComparison& c) {
  std::string out;
  if (!c.groups.empty()) {
    std::vector<TableLine> lines{{"OUTCOME", "WORKLOAD", "CASE", "ALLOCATOR", "METRIC", "MODEL", "RANKS",
                                  "GPUS", c.base_driver, c.new_driver, "CHANGE", "PAIRED", "P", "NOTE"}};
    for (const DriverGroup& g : c.groups) {
      const compare::MetricComparison& m = g.judged;
      lines.push_back(
          {std::string(compare::to_string(m.outcome)), g.workload, g.case_label, g.allocator, g.metric,
           g.model, std::to_string(g.concurrent_ranks), std::to_string(g.gpus),
           format_quantity(m.base_median, g.unit), format_quantity(m.new_median, g.unit),
           m.change_pct ? fmt::format("{:+.1f}%", *m.change_pct) : "-",
           std::isfinite(g.paired_change_pct) ? fmt::format("{:+.1f}%", g.paired_change_pct) : "-",
           m.p_value ? fmt::format("{:.2g}", *m.p_value) : "-", m.note});
    }
    out += render_table(lines);
  }
  out += fmt::format(
      "driver {} -> {}: {} GPU(s) ran under both; {} measurement(s): {} WORSE, {} BETTER, {} SAME, {} "
      "UNSURE, "
      "{} not judged (a sample is a GPU: the change beyond {:g}% and Mann-Whitney p < {:g}); {} "
      "measurement(s) "
      "no GPU ran under both\n",
      c.base_driver, c.new_driver, c.gpus_both, c.groups.size(), c.counts.worse, c.counts.better,
      c.counts.same, c.counts.unsure, c.counts.not_judged, c.options.threshold_pct, c.options.alpha,
      c.groups_one_driver);
  return out;
}

nlohmann::json driver_json(const DriverComparison& c) {
  const auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  nlohmann::json list = nlohmann::json::array();
  for (const DriverGroup& g : c.groups) {
    const compare::MetricComparison& m = g.judged;
    list.push_back({{"workload", g.workload},
                    {"case", g.case_label},
                    {"allocator", g.allocator},
                    {"metric", g.metric},
                    {"unit", g.unit},
                    {"better", to_string(g.better)},
                    {"model", g.model},
                    {"concurrent_ranks", g.concurrent_ranks},
                    {"gpus", g.gpus},
                    {"base_median", number(m.base_median)},
                    {"new_median", number(m.new_median)},
                    {"change_pct", m.change_pct ? nlohmann::json(*m.change_pct) : nlohmann::json()},
                    {"paired_change_pct", number(g.paired_change_pct)},
                    {"p_value", m.p_value ? nlohmann::json(*m.p_value) : nlohmann::json()},
                    {"outcome", compare::to_string(m.outcome)},
                    {"note", m.note}});
  }
  return {{"schema", "memstress.driver-compare/1"},
          {"base_driver", c.base_driver},
          {"new_driver", c.new_driver},
          {"threshold_pct", c.options.threshold_pct},
          {"alpha", c.options.alpha},
          {"gpus_both", c.gpus_both},
          {"groups_one_driver", c.groups_one_driver},
          {"counts",
           {{"worse", c.counts.worse},
            {"better", c.counts.better},
            {"same", c.counts.same},
            {"unsure", c.counts.unsure},
            {"not_judged", c.counts.not_judged}}},
          {"groups", std::move(list)}};
}

}  // namespace memstress::db
