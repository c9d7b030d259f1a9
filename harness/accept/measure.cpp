#include "harness/accept/measure.hpp"

#include <algorithm>
#include <cmath>

namespace memstress {
namespace {

// A check's figure in words: the health figures "..._below_max" count generations or lanes under the link's
// maximum, which the results record as "gen" and "lanes" (kept, so that runs compare across versions).
std::string shown_unit(std::string_view metric, const std::string& unit) {
  if (!metric.ends_with("_below_max")) {
    return unit;
  }
  return (unit == "gen" ? std::string("generations") : unit) + " below max";
}

}  // namespace

bool matches(const ResultRow& row, const AcceptCheck& check) {
  if (row.workload != check.workload) {
    return false;
  }
  return std::all_of(check.where.begin(), check.where.end(),
                     [&](const std::pair<std::string, std::string>& w) {
                       const auto it = row.params.find(w.first);
                       return it != row.params.end() && it->second == w.second;
                     });
}

std::optional<Measured> measure(const AcceptCheck& check, const AcceptRows& rows) {
  Measured m;
  const bool count = check.metric == "verification.errors" || check.metric == "verdict";
  for (const ResultRow& row : rows) {
    if (!matches(row, check)) {
      continue;
    }
    if (count) {
      ++m.rows;
      m.higher_better = false;
      m.is_sum = true;
      const bool errors = check.metric == "verification.errors";
      m.unit = errors ? "data errors" : "rows not passed";
      const double v = errors ? static_cast<double>(row.errors) : (row.verdict == Verdict::pass ? 0.0 : 1.0);
      m.value += v;
      m.values.push_back({&row, v});
      continue;
    }
    const MetricResult* metric = row.metric(check.metric);
    // Only a row that passed is judged on its figures (Note [What a check expects] in missing.hpp); null
    // is "not measured".
    if (row.verdict != Verdict::pass || metric == nullptr || !std::isfinite(metric->summary.median)) {
      continue;
    }
    const double v = metric->summary.median;
    const bool higher = metric->better != Better::lower;
    m.value = m.values.empty() ? v : (higher ? std::min(m.value, v) : std::max(m.value, v));
    m.higher_better = higher;
    m.unit = shown_unit(check.metric, metric->unit);
    m.values.push_back({&row, v});
    ++m.rows;
  }
  return m.values.empty() ? std::nullopt : std::optional<Measured>(m);
}

}  // namespace memstress
