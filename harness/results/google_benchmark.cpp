// Google Benchmark JSON (JSONReporter) as one side of a comparison: see results.hpp for the mapping.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>

#include "harness/core/error.hpp"
#include "harness/core/json_field.hpp"
#include "harness/core/json_text.hpp"
#include "harness/results/read.hpp"
#include "harness/stats/summary.hpp"

namespace memstress {
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

  MetricResult& metric(const std::string& name, const JsonField& entry) {
    for (MetricResult& m : metrics) {
      if (m.name == name) {
        return m;
      }
    }
    if (name == "real_time" || name == "cpu_time") {
      MetricResult m;
      m.name = name;
      m.unit = entry.string_or("time_unit", "ns");
      m.better = Better::lower;
      metrics.push_back(std::move(m));
    } else {
      metrics.push_back(counter_metric(name));
    }
    return metrics.back();
  }

  void add(const JsonField& entry) {
    // A run that errored or was skipped reports zero times: those are not measurements.
    if (entry.boolean_or("error_occurred", false)) {
      row.verdict = Verdict::error;
      row.reason = entry.string_or("error_message", "error");
      return;
    }
    if (entry.boolean_or("skipped", false)) {
      if (row.verdict != Verdict::error) {
        row.verdict = Verdict::skip;
        row.reason = entry.string_or("skip_message", "skipped");
      }
      return;
    }
    const bool aggregate = entry.string_or("run_type", "iteration") == "aggregate";
    if (aggregate && (entry.string_or("aggregate_name", "") != "median" ||
                      entry.string_or("aggregate_unit", "time") != "time")) {
      return;  // mean, stddev, cv, BigO, RMS, user statistics: not samples, not medians
    }
    for (const auto& [key, value] : entry.members()) {
      if ((key != "real_time" && key != "cpu_time" && is_reporter_key(key)) ||
          !(value.json().is_number() || value.is_null())) {
        continue;
      }
      MetricResult& m = metric(key, entry);
      if (aggregate) {
        aggregate_median[key] = value.real();
      } else {
        m.samples.push_back(value.real());
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
  return v.is_string() ? v.get<std::string>() : json_text(v);
}

}  // namespace

Results google_benchmark_results(const nlohmann::json& document) {
  Results r;
  r.kind = ResultsKind::google_benchmark;
  r.format = "Google Benchmark JSON";
  const JsonField fields(document);
  std::string device;
  if (const std::optional<JsonField> context = fields.find("context");
      context && context->json().is_object()) {
    for (const auto& [key, value] : context->members()) {
      if (std::find(kVolatileContext.begin(), kVolatileContext.end(), key) == kVolatileContext.end()) {
        r.environment.emplace_back(key, context_text(value.json()));
      }
    }
    device = context->string_or("gpu", "");
    // memstress_bench's context names the machine and the GPU; other programs' may not.
    RankIdentity id;
    id.host = context->string_or("host_name", context->string_or("host", ""));
    id.driver = context->string_or("driver_version", "");
    id.cuda_runtime = context->string_or("cuda_runtime", "");
    id.device_uuid = context->string_or("gpu_uuid", "");
    if (!id.device_uuid.empty()) {
      id.gpus.push_back({id.device_uuid, device, "", ""});
    }
    r.identities.push_back(std::move(id));
    r.started_at = context->string_or("date", "");
  }
  std::vector<Benchmark> benchmarks;
  std::map<std::string, std::size_t> index;
  bool any_samples = false;
  for (const JsonField& entry : fields["benchmarks"].elements()) {  // "field benchmarks[3].name: ..."
    const std::optional<JsonField> run_name = entry.find("run_name");
    const std::string name = run_name ? run_name->string() : entry["name"].string();
    auto [it, added] = index.try_emplace(name, benchmarks.size());
    if (added) {
      Benchmark b;
      const std::size_t slash = name.find('/');
      b.row.workload = name.substr(0, slash);
      b.row.case_label = slash == std::string::npos ? std::string() : name.substr(slash + 1);
      b.row.device = device;
      b.row.gpu.uuid = r.identities.empty() ? std::string() : r.identities.front().device_uuid;
      benchmarks.push_back(std::move(b));
    }
    benchmarks[it->second].add(entry);
    any_samples = any_samples || entry.string_or("run_type", "iteration") != "aggregate";
  }
  for (Benchmark& b : benchmarks) {
    r.rows.push_back(std::move(b).finish());
  }
  if (!any_samples && !r.rows.empty()) {
    r.notes.emplace_back(
        "aggregates only (no per-repetition entries): medians are compared, but a change beyond the "
        "threshold stays UNSURE; rerun with "
        "--benchmark_report_aggregates_only=false");  // another program's command line
  }
  return r;
}

}  // namespace memstress
