// Google Benchmark JSON (JSONReporter) as one side of a comparison: see results.hpp for the mapping.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>

#include "harness/compare/results.hpp"
#include "harness/core/error.hpp"
#include "harness/stats/summary.hpp"

namespace memstress::compare {
namespace {

// The keys JSONReporter writes itself; every other number in an entry is a user counter.
constexpr std::array<std::string_view, 27> kReporterKeys{"name",
                                                         "family_index",
                                                         "per_family_instance_index",
                                                         "run_name",
                                                         "run_type",
                                                         "repetitions",
                                                         "repetition_index",
                                                         "threads",
                                                         "aggregate_name",
                                                         "aggregate_unit",
                                                         "error_occurred",
                                                         "error_message",
                                                         "skipped",
                                                         "skip_message",
                                                         "iterations",
                                                         "real_time",
                                                         "cpu_time",
                                                         "time_unit",
                                                         "cpu_coefficient",
                                                         "real_coefficient",
                                                         "big_o",
                                                         "rms",
                                                         "label",
                                                         "allocs_per_iter",
                                                         "max_bytes_used",
                                                         "total_allocated_bytes",
                                                         "net_heap_growth"};

// What the context says about when the run happened rather than what it ran on.
constexpr std::array<std::string_view, 2> kVolatileContext{"date", "load_avg"};

bool is_reporter_key(std::string_view key) {
  return std::find(kReporterKeys.begin(), kReporterKeys.end(), key) != kReporterKeys.end();
}

double real(const nlohmann::json& v) {
  return v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

MetricResult counter_metric(const std::string& name) {
  MetricResult m;
  m.name = name;
  m.better = ends_with(name, "_per_second") ? Better::higher : Better::none;
  m.unit = name == "bytes_per_second" ? "B/s" : name == "items_per_second" ? "items/s" : "";
  return m;
}

// One benchmark (run_name): its metrics in first-seen order, samples from iterations, medians from the
// "median" aggregate.
struct Benchmark {
  ResultRow row;
  std::vector<MetricResult> metrics;
  std::map<std::string, double> aggregate_median;

  MetricResult& metric(const std::string& name, const nlohmann::json& entry) {
    for (MetricResult& m : metrics) {
      if (m.name == name) {
        return m;
      }
    }
    if (name == "real_time" || name == "cpu_time") {
      MetricResult m;
      m.name = name;
      m.unit = entry.value("time_unit", std::string("ns"));
      m.better = Better::lower;
      metrics.push_back(std::move(m));
    } else {
      metrics.push_back(counter_metric(name));
    }
    return metrics.back();
  }

  void add(const nlohmann::json& entry) {
    // A run that errored or was skipped reports zero times: those are not measurements.
    if (entry.value("error_occurred", false)) {
      row.verdict = Verdict::error;
      row.reason = entry.value("error_message", std::string("error"));
      return;
    }
    if (entry.value("skipped", false)) {
      if (row.verdict != Verdict::error) {
        row.verdict = Verdict::skip;
        row.reason = entry.value("skip_message", std::string("skipped"));
      }
      return;
    }
    const bool aggregate = entry.value("run_type", std::string("iteration")) == "aggregate";
    if (aggregate && (entry.value("aggregate_name", std::string()) != "median" ||
                      entry.value("aggregate_unit", std::string("time")) != "time")) {
      return;  // mean, stddev, cv, BigO, RMS, user statistics: not samples, not medians
    }
    for (const auto& [key, value] : entry.items()) {
      if ((key != "real_time" && key != "cpu_time" && is_reporter_key(key)) ||
          !(value.is_number() || value.is_null())) {
        continue;
      }
      MetricResult& m = metric(key, entry);
      if (aggregate) {
        aggregate_median[key] = real(value);
      } else {
        m.samples.push_back(real(value));
      }
    }
  }

  ResultRow finish() && {
    for (MetricResult& m : metrics) {
      std::vector<double> finite;
      std::copy_if(m.samples.begin(), m.samples.end(), std::back_inserter(finite),
                   [](double x) { return std::isfinite(x); });
      m.summary = summarize(finite);
      if (finite.empty()) {
        const auto it = aggregate_median.find(m.name);
        m.summary.median =
            it == aggregate_median.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
      }
    }
    // The times first, as the reporter prints them; then the counters (JSON objects iterate by name).
    std::stable_partition(metrics.begin(), metrics.end(), [](const MetricResult& m) {
      return m.name == "real_time" || m.name == "cpu_time";
    });
    std::stable_partition(metrics.begin(), metrics.end(),
                          [](const MetricResult& m) { return m.name == "real_time"; });
    row.metrics = std::move(metrics);
    return std::move(row);
  }
};

std::string context_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

Results google_benchmark_results(const nlohmann::json& document) {
  Results r;
  r.kind = ResultsKind::google_benchmark;
  r.format = "Google Benchmark JSON";
  std::string device;
  if (document.contains("context") && document.at("context").is_object()) {
    for (const auto& [key, value] : document.at("context").items()) {
      if (std::find(kVolatileContext.begin(), kVolatileContext.end(), key) == kVolatileContext.end()) {
        r.environment.emplace_back(key, context_text(value));
      }
    }
    device = document.at("context").value("gpu", std::string());
  }
  std::vector<Benchmark> benchmarks;
  std::map<std::string, std::size_t> index;
  bool any_samples = false;
  const nlohmann::json& entries = document.at("benchmarks");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    try {
      const nlohmann::json& entry = entries[i];
      const std::string name = entry.contains("run_name") ? entry.at("run_name").get<std::string>()
                                                          : entry.at("name").get<std::string>();
      auto [it, added] = index.try_emplace(name, benchmarks.size());
      if (added) {
        Benchmark b;
        const std::size_t slash = name.find('/');
        b.row.workload = name.substr(0, slash);
        b.row.case_label = slash == std::string::npos ? std::string() : name.substr(slash + 1);
        b.row.device = device;
        benchmarks.push_back(std::move(b));
      }
      benchmarks[it->second].add(entry);
      any_samples = any_samples || entry.value("run_type", std::string("iteration")) != "aggregate";
    } catch (const nlohmann::json::exception& e) {
      throw InputError(fmt::format("benchmarks[{}]: {}", i, e.what()));
    }
  }
  for (Benchmark& b : benchmarks) {
    r.rows.push_back(std::move(b).finish());
  }
  if (!any_samples && !r.rows.empty()) {
    r.notes.emplace_back(
        "aggregates only (no per-repetition entries): medians are compared, but a change beyond the "
        "threshold stays UNSURE; rerun with --benchmark_report_aggregates_only=false");
  }
  return r;
}

}  // namespace memstress::compare
