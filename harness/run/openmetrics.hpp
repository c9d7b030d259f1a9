#pragma once

// Results in the OpenMetrics text format (https://openmetrics.io), for Prometheus through
// node_exporter's textfile collector: `memstress run --format openmetrics` and `memstress db export`.
//
// Note [memstress in OpenMetrics]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A memstress metric's name is free text with its unit in it ("GB/s", "alloc_free_us", "ref_GB/s") and
// its rows are a case on a GPU, so the metric is a label, not part of a family name: one gauge family
// per statistic, every series labelled by where it ran and what it measured:
//
//   memstress_metric_median{host, gpu_uuid, model, rank, workload, case, allocator, metric, unit}
//   memstress_metric_p10, memstress_metric_p90, memstress_metric_repetitions   (same labels)
//   memstress_case_verdict{host, gpu_uuid, model, rank, workload, case, allocator, verdict}
//     1 for the row's verdict and 0 for the other three (pass, fail, skip, error): the state-set idiom,
//     so `memstress_case_verdict{verdict="fail"} == 1` is an alert rule
//   memstress_case_checked, memstress_case_data_errors   (the case's labels): items verified, wrong
//   memstress_run_start_timestamp_seconds{host, driver, memstress_version}: when the run began
//
// Only gauges, no timestamps on samples and no `info`/`stateset` types: the textfile collector parses
// the Prometheus text format, which knows neither and refuses timestamps, and a file in the subset both
// formats share is read by either (the `# UNIT` and `# EOF` lines are comments to the older parser).
// Label values are escaped (backslash, double quote, newline); a NaN median is written as NaN. Two rows
// with the same labels (one case run twice on one GPU in one run) would be one series twice, which the
// format forbids: the later row wins, as the later measurement.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "harness/results/row.hpp"

namespace memstress {

// One row as exported: where it ran, what it measured.
struct ExportedRow {
  std::string host;
  std::string gpu_uuid;
  std::string model;  // the GPU's name, "NVIDIA H100 80GB HBM3"
  std::optional<int> rank;
  std::string workload;
  std::string case_label;
  std::string allocator;
  Verdict verdict = Verdict::pass;
  std::uint64_t checked = 0;
  std::uint64_t errors = 0;
  std::vector<MetricResult> metrics;  // their summaries (samples are not exported)
};

// A run as exported: one per host and run (one series per host, the newest where several).
struct ExportedRun {
  std::string host;
  std::string driver;
  std::string memstress_version;
  std::string started_at;  // UTC, ISO 8601; a run without one is not exported
};

// Rows with their label sets made (escaped once), each label set once, and their metrics' statistics: what
// the exposition writes, held compactly (a fleet's export is millions of metrics: `memstress db export`).
class LabelledRows {
 public:
  struct Metric {
    std::uint32_t label = 0;  // into metric_labels()
    std::int64_t id = 0;      // the store's order of a row's metrics (db export's; not written)
    std::size_t n = 0;
    double median = 0;
    double p10 = 0;
    double p90 = 0;
  };
  struct Row {
    const std::string* labels = nullptr;  // case_labels(), held once by LabelledRows
    Verdict verdict = Verdict::pass;
    std::uint64_t checked = 0;
    std::uint64_t errors = 0;
    std::vector<Metric> metrics;
  };

  LabelledRows() = default;
  LabelledRows(const LabelledRows&) = delete;  // rows point at labels it holds
  LabelledRows& operator=(const LabelledRows&) = delete;
  LabelledRows(LabelledRows&&) = default;
  LabelledRows& operator=(LabelledRows&&) = default;
  ~LabelledRows() = default;

  // A row of these labels; a later row with the same labels replaces the earlier, in its place (the format
  // forbids one series twice: the later measurement wins). Its metrics are written in their order.
  void add(std::string labels, Verdict verdict, std::uint64_t checked, std::uint64_t errors,
           std::vector<Metric> metrics);
  // The position in metric_labels() of a metric's labels (`,metric="...",unit="..."`), added where new.
  std::uint32_t metric_label(std::string_view name, std::string_view unit);

  [[nodiscard]] const std::vector<Row>& rows() const { return rows_; }
  [[nodiscard]] const std::vector<std::string>& metric_labels() const { return metric_labels_; }

 private:
  std::vector<Row> rows_;
  std::unordered_map<std::string, std::uint32_t>
      row_at_;  // labels -> position in rows_ (Row::labels: its key)
  std::vector<std::string> metric_labels_;
  std::unordered_map<std::string, std::uint32_t> metric_label_at_;
  std::string key_;  // reused
};

// A row's labels, escaped: `{host="...",...,allocator="..."`, left open for what a family adds.
std::string case_labels(const ExportedRow& row);

// The exposition, ending in `# EOF`.
std::string openmetrics_text(const std::vector<ExportedRun>& runs, const std::vector<ExportedRow>& rows);
// The same, handed to `write` in pieces (a fleet's exposition is gigabytes: never held whole).
void write_openmetrics(const std::vector<ExportedRun>& runs, const std::vector<ExportedRow>& rows,
                       const std::function<void(std::string_view)>& write);
// The same from rows labelled already.
void write_openmetrics(const std::vector<ExportedRun>& runs, const LabelledRows& rows,
                       const std::function<void(std::string_view)>& write);

// A run of this process: its rows (host and GPU UUID from the row's rank's environment) and its ranks.
std::string format_openmetrics(const RunRecord& run);

// Seconds since the epoch of "2026-11-21T14:03:05Z" (fractions and a missing Z allowed); nullopt for
// anything else.
std::optional<double> iso8601_to_epoch_seconds(std::string_view text);

}  // namespace memstress
