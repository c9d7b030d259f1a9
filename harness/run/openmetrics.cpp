// The OpenMetrics exposition of results (openmetrics.hpp, Note [memstress in OpenMetrics]).

#include "harness/run/openmetrics.hpp"

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cmath>
#include <map>
#include <tuple>

namespace memstress {
namespace {

std::string escaped(std::string_view value) {
  std::string out;
  out.reserve(value.size());
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
  return out;
}

std::string number(double value) {
  if (std::isnan(value)) {
    return "NaN";
  }
  if (std::isinf(value)) {
    return value > 0 ? "+Inf" : "-Inf";
  }
  return fmt::format("{}", value);
}

using Labels = std::vector<std::pair<std::string_view, std::string>>;

std::string label_text(const Labels& labels) {
  std::string out = "{";
  for (const auto& [name, value] : labels) {
    out += fmt::format("{}{}=\"{}\"", out.size() > 1 ? "," : "", name, escaped(value));
  }
  return out + "}";
}

Labels case_labels(const ExportedRow& row) {
  return {{"host", row.host},          {"gpu_uuid", row.gpu_uuid},
          {"model", row.model},        {"rank", row.rank ? std::to_string(*row.rank) : std::string()},
          {"workload", row.workload},  {"case", row.case_label},
          {"allocator", row.allocator}};
}

class Exposition {
 public:
  void family(std::string_view name, std::string_view help, std::string_view unit = {}) {
    out_ += fmt::format("# TYPE {} gauge\n", name);
    if (!unit.empty()) {
      out_ += fmt::format("# UNIT {} {}\n", name, unit);
    }
    out_ += fmt::format("# HELP {} {}\n", name, help);
  }
  void sample(std::string_view name, const Labels& labels, double value) {
    out_ += fmt::format("{}{} {}\n", name, label_text(labels), number(value));
  }
  std::string finish() { return std::move(out_) + "# EOF\n"; }

 private:
  std::string out_;
};

// The rows left once a later row with the same labels replaced an earlier one.
std::vector<const ExportedRow*> distinct(const std::vector<ExportedRow>& rows) {
  std::map<std::string, std::size_t> position;
  std::vector<const ExportedRow*> out;
  for (const ExportedRow& row : rows) {
    const std::string key = label_text(case_labels(row));
    if (const auto it = position.find(key); it != position.end()) {
      out[it->second] = &row;
    } else {
      position.emplace(key, out.size());
      out.push_back(&row);
    }
  }
  return out;
}

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

std::string openmetrics_text(const std::vector<ExportedRun>& runs, const std::vector<ExportedRow>& rows) {
  Exposition e;
  const std::vector<const ExportedRow*> kept = distinct(rows);
  struct Statistic {
    std::string_view family;
    std::string_view help;
    double (*value)(const MetricResult&);
  };
  static constexpr std::array<Statistic, 4> kStatistics{{
      {"memstress_metric_median",
       "A memstress metric's median over the case's repetitions, in its unit label",
       [](const MetricResult& m) { return m.summary.median; }},
      {"memstress_metric_p10", "The metric's 10th percentile over the repetitions",
       [](const MetricResult& m) { return m.summary.p10; }},
      {"memstress_metric_p90", "The metric's 90th percentile over the repetitions",
       [](const MetricResult& m) { return m.summary.p90; }},
      {"memstress_metric_repetitions", "How many repetitions the metric's statistics are over",
       [](const MetricResult& m) { return static_cast<double>(m.summary.n); }},
  }};
  for (const Statistic& stat : kStatistics) {
    e.family(stat.family, stat.help);
    for (const ExportedRow* row : kept) {
      for (const MetricResult& m : row->metrics) {
        Labels labels = case_labels(*row);
        labels.emplace_back("metric", m.name);
        labels.emplace_back("unit", m.unit);
        e.sample(stat.family, labels, stat.value(m));
      }
    }
  }
  e.family("memstress_case_verdict", "1 for the case's verdict (pass, fail, skip, error), 0 for the others");
  for (const ExportedRow* row : kept) {
    for (const Verdict v : {Verdict::pass, Verdict::fail, Verdict::skip, Verdict::error}) {
      Labels labels = case_labels(*row);
      labels.emplace_back("verdict", std::string(to_string(v)));
      e.sample("memstress_case_verdict", labels, row->verdict == v ? 1 : 0);
    }
  }
  e.family("memstress_case_checked", "Data items the case verified on the device");
  for (const ExportedRow* row : kept) {
    e.sample("memstress_case_checked", case_labels(*row), static_cast<double>(row->checked));
  }
  e.family("memstress_case_data_errors", "Of the items verified, how many were wrong (a data error)");
  for (const ExportedRow* row : kept) {
    e.sample("memstress_case_data_errors", case_labels(*row), static_cast<double>(row->errors));
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
    e.sample(kStart, {{"host", host}, {"driver", driver}, {"memstress_version", version}}, at);
  }
  return e.finish();
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
