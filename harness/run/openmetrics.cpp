// The OpenMetrics exposition of results (openmetrics.hpp, Note [memstress in OpenMetrics]).

#include "harness/run/openmetrics.hpp"

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cmath>
#include <functional>
#include <iterator>
#include <map>
#include <tuple>
#include <unordered_map>

namespace memstress {
namespace {

void append_escaped(std::string& out, std::string_view value) {
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

void append_label(std::string& out, std::string_view name, std::string_view value) {
  out += out.empty() || out.back() == '{' ? "" : ",";
  out += name;
  out += "=\"";
  append_escaped(out, value);
  out += '"';
}

void append_number(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
  } else {
    fmt::format_to(std::back_inserter(out), "{}", value);
  }
}

// The exposition, written in pieces of about a megabyte (a fleet's is gigabytes: never held whole).
class Exposition {
 public:
  explicit Exposition(const std::function<void(std::string_view)>& write) : write_(&write) {
    out_.reserve(kPiece + 4096);
  }
  void family(std::string_view name, std::string_view help, std::string_view unit = {}) {
    fmt::format_to(std::back_inserter(out_), "# TYPE {} gauge\n", name);
    if (!unit.empty()) {
      fmt::format_to(std::back_inserter(out_), "# UNIT {} {}\n", name, unit);
    }
    fmt::format_to(std::back_inserter(out_), "# HELP {} {}\n", name, help);
  }
  // A sample: `name`, the open `labels` and what `more` appends to them (each label after a comma), its
  // value.
  template <typename More>
  void sample(std::string_view name, std::string_view labels, More more, double value) {
    out_ += name;
    out_ += labels;
    more(out_);
    out_ += "} ";
    append_number(out_, value);
    out_ += '\n';
    if (out_.size() >= kPiece) {
      flush();
    }
  }
  void finish() {
    out_ += "# EOF\n";
    flush();
  }

 private:
  static constexpr std::size_t kPiece = std::size_t{1} << 20;
  void flush() {
    (*write_)(out_);
    out_.clear();
  }
  const std::function<void(std::string_view)>* write_;
  std::string out_;
};

const auto kNoMore = [](std::string& /*out*/) {};

}  // namespace

std::optional<double> iso8601_to_epoch_seconds(std::string_view text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0;
  double s = 0;
  char tail = '\0';
  const std::string copy(text);
  // NOLINTNEXTLINE(cert-err34-c): each field's range is checked below
  const int got = std::sscanf(copy.c_str(), "%4d-%2d-%2dT%2d:%2d:%lf%c", &y, &mo, &d, &h, &mi, &s, &tail);
  if (got < 6 || (got == 7 && tail != 'Z') || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
      h < 0 || mi < 0 || !(s >= 0 && s < 61)) {
    return std::nullopt;
  }
  const std::chrono::year_month_day day{std::chrono::year{y}, std::chrono::month{static_cast<unsigned>(mo)},
                                        std::chrono::day{static_cast<unsigned>(d)}};
  if (!day.ok()) {
    return std::nullopt;
  }
  const auto days = std::chrono::sys_days{day}.time_since_epoch().count();
  return static_cast<double>(days) * 86400.0 + h * 3600.0 + mi * 60.0 + s;
}

std::string case_labels(const ExportedRow& row) {
  std::string out = "{";
  append_label(out, "host", row.host);
  append_label(out, "gpu_uuid", row.gpu_uuid);
  append_label(out, "model", row.model);
  append_label(out, "rank", row.rank ? std::to_string(*row.rank) : std::string());
  append_label(out, "workload", row.workload);
  append_label(out, "case", row.case_label);
  append_label(out, "allocator", row.allocator);
  return out;
}

void LabelledRows::add(std::string labels, Verdict verdict, std::uint64_t checked, std::uint64_t errors,
                       std::vector<Metric> metrics) {
  const auto [at, added] = row_at_.try_emplace(std::move(labels), static_cast<std::uint32_t>(rows_.size()));
  if (added) {
    rows_.push_back({&at->first, verdict, checked, errors, std::move(metrics)});
    return;
  }
  Row& row = rows_[at->second];
  row.verdict = verdict;
  row.checked = checked;
  row.errors = errors;
  row.metrics = std::move(metrics);
}

std::uint32_t LabelledRows::metric_label(std::string_view name, std::string_view unit) {
  key_.assign(name);
  key_ += '\0';  // no text field holds a NUL (limits.md)
  key_ += unit;
  const auto [at, added] =
      metric_label_at_.try_emplace(key_, static_cast<std::uint32_t>(metric_labels_.size()));
  if (added) {
    std::string labels = "{";
    append_label(labels, "metric", name);
    append_label(labels, "unit", unit);
    labels.front() = ',';
    metric_labels_.push_back(std::move(labels));
  }
  return at->second;
}

std::string openmetrics_text(const std::vector<ExportedRun>& runs, const std::vector<ExportedRow>& rows) {
  std::string out;
  write_openmetrics(runs, rows, [&](std::string_view piece) { out += piece; });
  return out;
}

void write_openmetrics(const std::vector<ExportedRun>& runs, const std::vector<ExportedRow>& rows,
                       const std::function<void(std::string_view)>& write) {
  LabelledRows labelled;
  for (const ExportedRow& row : rows) {
    std::vector<LabelledRows::Metric> metrics;
    metrics.reserve(row.metrics.size());
    for (const MetricResult& m : row.metrics) {
      metrics.push_back({labelled.metric_label(m.name, m.unit), 0, m.summary.n, m.summary.median,
                         m.summary.p10, m.summary.p90});
    }
    labelled.add(case_labels(row), row.verdict, row.checked, row.errors, std::move(metrics));
  }
  write_openmetrics(runs, labelled, write);
}

void write_openmetrics(const std::vector<ExportedRun>& runs, const LabelledRows& labelled,
                       const std::function<void(std::string_view)>& write) {
  Exposition e(write);
  const std::vector<LabelledRows::Row>& rows = labelled.rows();
  const std::vector<std::string>& metric_labels = labelled.metric_labels();
  struct Statistic {
    std::string_view family;
    std::string_view help;
    double (*value)(const LabelledRows::Metric&);
  };
  static constexpr std::array<Statistic, 4> kStatistics{{
      {"memstress_metric_median",
       "A memstress metric's median over the case's repetitions, in its unit label",
       [](const LabelledRows::Metric& m) { return m.median; }},
      {"memstress_metric_p10", "The metric's 10th percentile over the repetitions",
       [](const LabelledRows::Metric& m) { return m.p10; }},
      {"memstress_metric_p90", "The metric's 90th percentile over the repetitions",
       [](const LabelledRows::Metric& m) { return m.p90; }},
      {"memstress_metric_repetitions", "How many repetitions the metric's statistics are over",
       [](const LabelledRows::Metric& m) { return static_cast<double>(m.n); }},
  }};
  for (const Statistic& stat : kStatistics) {
    e.family(stat.family, stat.help);
    for (const LabelledRows::Row& row : rows) {
      for (const LabelledRows::Metric& m : row.metrics) {
        e.sample(
            stat.family, *row.labels, [&](std::string& out) { out += metric_labels[m.label]; },
            stat.value(m));
      }
    }
  }
  e.family("memstress_case_verdict", "1 for the case's verdict (pass, fail, skip, error), 0 for the others");
  for (const LabelledRows::Row& row : rows) {
    for (const Verdict v : {Verdict::pass, Verdict::fail, Verdict::skip, Verdict::error}) {
      e.sample(
          "memstress_case_verdict", *row.labels,
          [&](std::string& out) { append_label(out, "verdict", to_string(v)); }, row.verdict == v ? 1 : 0);
    }
  }
  e.family("memstress_case_checked", "Data items the case verified on the device");
  for (const LabelledRows::Row& row : rows) {
    e.sample("memstress_case_checked", *row.labels, kNoMore, static_cast<double>(row.checked));
  }
  e.family("memstress_case_data_errors", "Of the items verified, how many were wrong (a data error)");
  for (const LabelledRows::Row& row : rows) {
    e.sample("memstress_case_data_errors", *row.labels, kNoMore, static_cast<double>(row.errors));
  }
  constexpr std::string_view kStart = "memstress_run_start_timestamp_seconds";
  e.family(kStart, "When the host's memstress run began (seconds since the epoch)", "seconds");
  std::map<std::tuple<std::string, std::string, std::string>, double> starts;  // newest per label set
  for (const ExportedRun& run : runs) {
    if (const std::optional<double> t = iso8601_to_epoch_seconds(run.started_at)) {
      double& at = starts[{run.host, run.driver, run.memstress_version}];
      at = std::max(at, *t);
    }
  }
  for (const auto& [key, at] : starts) {
    const auto& [host, driver, version] = key;
    std::string run_labels = "{";
    append_label(run_labels, "host", host);
    append_label(run_labels, "driver", driver);
    append_label(run_labels, "memstress_version", version);
    e.sample(kStart, run_labels, kNoMore, at);
  }
  e.finish();
}

std::string format_openmetrics(const RunRecord& run) {
  const auto text = [](const nlohmann::json& j, const char* pointer) {
    const nlohmann::json::json_pointer p(pointer);
    return j.contains(p) && j.at(p).is_string() ? j.at(p).get<std::string>() : std::string();
  };
  std::map<int, const nlohmann::json*> ranks;
  std::vector<ExportedRun> runs;
  if (run.environment.is_object() && run.environment.contains("ranks") &&
      run.environment["ranks"].is_array()) {
    for (const nlohmann::json& rank : run.environment["ranks"]) {
      if (rank.is_object() && rank.contains("rank") && rank["rank"].is_number_integer()) {
        ranks[rank["rank"].get<int>()] = &rank;
        runs.push_back(
            {text(rank, "/host/name"), text(rank, "/driver/version"), run.tool_version, run.started_at});
      }
    }
  }
  std::vector<ExportedRow> rows;
  rows.reserve(run.rows.size());
  for (const Row& r : run.rows) {
    ExportedRow row;
    const auto rank = ranks.find(r.rank);
    row.host = rank != ranks.end() ? text(*rank->second, "/host/name") : std::string();
    row.gpu_uuid = r.device.uuid;
    row.model = r.device.name;
    row.rank = r.rank;
    row.workload = r.workload;
    row.case_label = r.case_label();
    row.allocator = r.allocator;
    row.verdict = r.verdict;
    row.checked = r.checked;
    row.errors = r.errors;
    row.metrics = r.metrics;
    rows.push_back(std::move(row));
  }
  return openmetrics_text(runs, rows);
}

}  // namespace memstress
