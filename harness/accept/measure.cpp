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
  for (const ResultRow& row : rows) {
    if (!matches(row, check)) {
      continue;
    }
    ++m.rows;
    if (check.metric == "verification.errors" || check.metric == "verdict") {
      m.higher_better = false;
      m.is_sum = true;
      const bool errors = check.metric == "verification.errors";
      m.unit = errors ? "data errors" : "rows not passed";
      const double v = errors ? static_cast<double>(row.errors) : (row.verdict == Verdict::pass ? 0.0 : 1.0);
      m.value += v;
      m.values.push_back({&row, v});
    } else if (const MetricResult* metric = row.metric(check.metric)) {
      if (std::isnan(metric->summary.median)) {  // written as null: not measured
        continue;
      }
      const double v = metric->summary.median;
      const bool higher = metric->better != Better::lower;
      m.value = m.values.empty() ? v : (higher ? std::min(m.value, v) : std::max(m.value, v));
      m.higher_better = higher;
      m.unit = shown_unit(check.metric, metric->unit);
      m.values.push_back({&row, v});
    }
  }
  return m.values.empty() ? std::nullopt : std::optional<Measured>(m);
}

}  // namespace memstress
