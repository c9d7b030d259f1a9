#include "harness/run/format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/core/json_text.hpp"
#include "harness/run/openmetrics.hpp"

namespace memstress {
namespace {

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\n") == std::string_view::npos) {
    return std::string(text);
  }
  std::string quoted = "\"";
  for (const char c : text) {
    quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  }
  return quoted + '"';
}

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

}  // namespace

OutputFormat parse_output_format(std::string_view text, std::string_view what) {
  if (text == "table") {
    return OutputFormat::table;
  }
  if (text == "json") {
    return OutputFormat::json;
  }
  if (text == "csv") {
    return OutputFormat::csv;
  }
  if (text == "openmetrics") {
    return OutputFormat::openmetrics;
  }
  throw InputError(fmt::format("{} '{}': choose table, json, csv or openmetrics", what, text));
}

std::string format_value(double value) {
  if (value == 0.0 || !std::isfinite(value)) {
    return fmt::format("{}", value);
  }
  if (std::abs(value) >= 1e5) {
    return fmt::format("{:.0f}", value);
  }
  return fmt::format("{:.4g}", value);
}

std::string format_csv(const RunRecord& run) {
  static constexpr std::array kHeader{
      "workload", "case", "allocator", "rank", "device", "verdict", "metric", "unit",    "n",      "median",
      "p10",      "p90",  "min",       "max",  "mean",   "stddev",  "cv",     "checked", "errors", "reason"};
  std::string out;
  for (std::size_t i = 0; i < kHeader.size(); ++i) {
    out += fmt::format("{}{}", i == 0 ? "" : ",", kHeader[i]);
  }
  out += '\n';
  for (const Row& row : run.rows) {
    const auto prefix =
        fmt::format("{},{},{},{},{},{}", csv_field(row.workload), csv_field(row.case_label()),
                    csv_field(row.allocator), row.rank, csv_field(row.device.label), to_string(row.verdict));
    const auto suffix = fmt::format("{},{},{}", row.checked, row.errors, csv_field(first_line(row.reason)));
    if (row.metrics.empty()) {
      out += fmt::format("{},,,,,,,,,,,,{}\n", prefix, suffix);
      continue;
    }
    for (const MetricResult& m : row.metrics) {
      const Summary& s = m.summary;
      out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{}\n", prefix, csv_field(m.name),
                         csv_field(m.unit), s.n, s.median, s.p10, s.p90, s.min, s.max, s.mean, s.stddev, s.cv,
                         suffix);
    }
  }
  return out;
}

std::string format_run(const RunRecord& run, OutputFormat format, const TableOptions& table) {
  switch (format) {
    case OutputFormat::table:
      return format_table(run, table);
    case OutputFormat::json:
      return json_text(run_json(run), 2) + "\n";
    case OutputFormat::csv:
      return format_csv(run);
    case OutputFormat::openmetrics:
      return format_openmetrics(run);
  }
  return format_table(run, table);
}

}  // namespace memstress
