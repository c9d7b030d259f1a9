#include "harness/results/row.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <limits>

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

void VerdictCounts::add(Verdict verdict) noexcept {
  switch (verdict) {
    case Verdict::pass:
      ++pass;
      break;
    case Verdict::fail:
      ++fail;
      break;
    case Verdict::skip:
      ++skip;
      break;
    case Verdict::error:
      ++error;
      break;
  }
}

VerdictCounts count_verdicts(const std::vector<Row>& rows) noexcept {
  VerdictCounts counts;
  for (const Row& row : rows) {
    counts.add(row.verdict);
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
