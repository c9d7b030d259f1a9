#include "harness/run/result.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <limits>

#include "harness/core/error.hpp"
#include "harness/run/rank_summary.hpp"

namespace memstress {

std::string_view to_string(Verdict verdict) noexcept {
  switch (verdict) {
    case Verdict::pass:
      return "pass";
    case Verdict::fail:
      return "fail";
    case Verdict::skip:
      return "skip";
    case Verdict::error:
      return "error";
  }
  return "error";
}

std::optional<Verdict> verdict_from_string(std::string_view text) noexcept {
  for (const Verdict v : {Verdict::pass, Verdict::fail, Verdict::skip, Verdict::error}) {
    if (to_string(v) == text) {
      return v;
    }
  }
  return std::nullopt;
}

std::optional<Better> better_from_string(std::string_view text) noexcept {
  for (const Better b : {Better::higher, Better::lower, Better::none}) {
    if (to_string(b) == text) {
      return b;
    }
  }
  return std::nullopt;
}

std::string_view to_string(Better better) noexcept {
  switch (better) {
    case Better::higher:
      return "higher";
    case Better::lower:
      return "lower";
    case Better::none:
      return "none";
  }
  return "none";
}

std::string_view to_string(RunStatus status) noexcept {
  switch (status) {
    case RunStatus::running:
      return "running";
    case RunStatus::complete:
      return "complete";
    case RunStatus::aborted:
      return "aborted";
  }
  return "aborted";
}

std::string not_measured_note(std::string_view metric, std::string_view why) {
  return fmt::format("{}{} ({})", kNotMeasured, metric, why);
}

std::string Row::case_label() const {
  std::string label;
  for (const auto& [key, value] : params) {
    if (!label.empty()) {
      label += ' ';
    }
    label += fmt::format("{}={}", key, value);
  }
  return label;
}

const MetricResult* find_metric(const std::vector<MetricResult>& metrics, std::string_view name) noexcept {
  for (const MetricResult& m : metrics) {
    if (m.name == name) {
      return &m;
    }
  }
  return nullptr;
}

const MetricResult* Row::metric(std::string_view name) const {
  return find_metric(metrics, name);
}

void to_json(nlohmann::json& j, const MetricResult& m) {
  const Summary& s = m.summary;
  j = nlohmann::json{{"unit", m.unit},
                     {"better", to_string(m.better)},
                     {"n", s.n},
                     {"median", s.median},
                     {"p10", s.p10},
                     {"p90", s.p90},
                     {"p99", s.p99},
                     {"min", s.min},
                     {"max", s.max},
                     {"mean", s.mean},
                     {"stddev", s.stddev},
                     {"cv", s.cv},
                     {"samples", m.samples}};
}

MetricResult read_metric(const JsonField& j, std::string name) {
  MetricResult m;
  m.name = std::move(name);
  m.unit = j["unit"].string();
  const JsonField better_field = j["better"];
  const std::string better = better_field.string();
  const auto b = better_from_string(better);
  if (!b) {
    throw InputError(
        fmt::format("field {}: '{}': expected higher, lower or none", better_field.path(), better));
  }
  m.better = *b;
  Summary& s = m.summary;
  s.n = static_cast<std::size_t>(j["n"].count());
  s.median = j["median"].real();
  s.p10 = j["p10"].real();
  s.p90 = j["p90"].real();
  s.p99 = j["p99"].real();
  s.min = j["min"].real();
  s.max = j["max"].real();
  s.mean = j["mean"].real();
  s.stddev = j["stddev"].real();
  s.cv = j["cv"].real();
  for (const JsonField& v : j["samples"].elements()) {
    m.samples.push_back(v.real());
  }
  return m;
}

void from_json(const nlohmann::json& j, MetricResult& m) {
  m = read_metric(JsonField(j), std::move(m.name));
}

void to_json(nlohmann::json& j, const Row& row) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [key, value] : row.params) {
    params[key] = value;
  }
  nlohmann::json metrics = nlohmann::json::object();
  for (const MetricResult& m : row.metrics) {
    metrics[m.name] = m;
  }
  j = nlohmann::json{
      {"workload", row.workload},
      {"case", row.case_label()},
      {"params", params},
      {"allocator", row.allocator},
      {"rank", row.rank},
      {"device",
       {{"label", row.device.label},
        {"kind", row.device.kind},
        {"ordinal", row.device.ordinal},
        {"name", row.device.name},
        {"uuid", row.device.uuid}}},
      {"verdict", to_string(row.verdict)},
      {"reason", row.reason},
      {"verification", {{"checked", row.checked}, {"errors", row.errors}}},
      {"metrics", metrics},
      {"notes", row.notes},
      {"allocator_stats", row.allocator_stats.is_null() ? nlohmann::json::object() : row.allocator_stats},
      {"started_at", row.started_at},
      {"seconds", row.seconds},
  };
  if (!row.self_test.empty()) {
    j["self_test"] = row.self_test;  // only on self-tests: other rows read as before
  }
}

nlohmann::json header_json(const RunRecord& run) {
  nlohmann::json j{
      {"schema", kSchemaId},
      {"memstress", {{"version", run.tool_version}, {"git_sha", run.git_sha}}},
      {"argv", run.argv},
      {"started_at", run.started_at},
      {"ended_at", run.ended_at.empty() ? nlohmann::json(nullptr) : nlohmann::json(run.ended_at)},
      {"status", to_string(run.status)},
      {"abort_reason", run.abort_reason},
      {"config", run.config.is_null() ? nlohmann::json::object() : run.config},
      {"environment", run.environment.is_null() ? nlohmann::json::object() : run.environment},
  };
  return j;
}

nlohmann::json run_json(const RunRecord& run) {
  nlohmann::json j = header_json(run);
  j["rows"] = run.rows;
  const VerdictCounts counts = count_verdicts(run.rows);
  j["summary"] = {{"rows", run.rows.size()},
                  {"pass", counts.pass},
                  {"fail", counts.fail},
                  {"skip", counts.skip},
                  {"error", counts.error}};
  if (run.ranks > 1) {
    j["rank_summary"] =
        rank_summary_json(summarize_ranks(run.rows, run.straggler_threshold), run.straggler_threshold);
  }
  return j;
}

VerdictCounts count_verdicts(const std::vector<Row>& rows) noexcept {
  VerdictCounts counts;
  for (const Row& row : rows) {
    switch (row.verdict) {
      case Verdict::pass:
        ++counts.pass;
        break;
      case Verdict::fail:
        ++counts.fail;
        break;
      case Verdict::skip:
        ++counts.skip;
        break;
      case Verdict::error:
        ++counts.error;
        break;
    }
  }
  return counts;
}

std::string utc_now_iso8601(bool milliseconds) {
  const auto now = std::chrono::system_clock::now();
  const auto seconds = std::chrono::time_point_cast<std::chrono::seconds>(now);
  const std::string whole =
      fmt::format("{:%Y-%m-%dT%H:%M:%S}", fmt::gmtime(std::chrono::system_clock::to_time_t(seconds)));
  if (!milliseconds) {
    return whole + "Z";
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - seconds).count();
  return fmt::format("{}.{:03}Z", whole, ms);
}

}  // namespace memstress
