#include "harness/compare/compare.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <compare>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "harness/core/error.hpp"

namespace memstress::compare {
namespace {

struct MatchKey {
  std::string workload;
  std::string case_label;
  std::map<std::string, std::string> params;
  std::string allocator;
  std::string device;

  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy sees a literal 0 in the defaulted comparison
  auto operator<=>(const MatchKey&) const = default;
};

MatchKey key_of(const ResultRow& row, const CompareOptions& options) {
  return {row.workload, row.case_label, row.params, row.allocator, options.match_any_gpu ? "" : row.device};
}

std::set<std::string> distinct(const std::vector<ResultRow>& rows, std::string ResultRow::*field) {
  std::set<std::string> seen;
  for (const ResultRow& row : rows) {
    seen.insert(row.*field);
  }
  return seen;
}

// The distinct values of one field over the rows, "a, b" (at most four, then "and N more").
std::string values_of(const std::vector<ResultRow>& rows, std::string ResultRow::*field) {
  const std::set<std::string> seen = distinct(rows, field);
  constexpr std::size_t kShown = 4;
  std::vector<std::string> shown;
  for (const std::string& v : seen) {
    if (shown.size() == kShown) {
      shown.push_back(fmt::format("and {} more", seen.size() - kShown));
      break;
    }
    shown.push_back(v.empty() ? "(none)" : v);
  }
  return fmt::format("{}", fmt::join(shown, ", "));
}

bool disjoint(const std::vector<ResultRow>& a, const std::vector<ResultRow>& b,
              std::string ResultRow::*field) {
  std::set<std::string> in_a;
  for (const ResultRow& row : a) {
    in_a.insert(row.*field);
  }
  return std::none_of(b.begin(), b.end(), [&](const ResultRow& row) { return in_a.contains(row.*field); });
}

// Why no row of BASE matched one of NEW, the first reason that holds: GPU models, workloads, allocators, then
// the cases (parameters).
std::string why_nothing_matched(const Results& base, const Results& next, const CompareOptions& options) {
  const auto sides = [&](std::string_view what, std::string ResultRow::*field) {
    return fmt::format("the {} differ: BASE has {}, NEW {}", what, values_of(base.rows, field),
                       values_of(next.rows, field));
  };
  if (!options.match_any_gpu && disjoint(base.rows, next.rows, &ResultRow::device)) {
    return sides("GPU models", &ResultRow::device) +
           fmt::format("; rows match by GPU model too ({} compares across models on purpose)",
                       options.match_any_gpu_flag);
  }
  if (disjoint(base.rows, next.rows, &ResultRow::workload)) {
    return sides("workloads", &ResultRow::workload);
  }
  if (disjoint(base.rows, next.rows, &ResultRow::allocator)) {
    return sides("allocators", &ResultRow::allocator);
  }
  return fmt::format(
      "the parameters differ: BASE's first case is `{} {}`, NEW's `{} {}`; rows match by workload, "
      "case, parameters, allocator{}",
      base.rows.front().workload, base.rows.front().case_label, next.rows.front().workload,
      next.rows.front().case_label, options.match_any_gpu ? "" : " and GPU model");
}

bool ranks_agree(const ResultRow& a, const ResultRow& b) {
  return !a.rank || !b.rank || *a.rank == *b.rank;
}

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

bool failed(Verdict v) {
  return v == Verdict::fail || v == Verdict::error;
}

// The row's verdicts side by side, and the reasons worth reading.
std::pair<Outcome, std::string> verdict_change(const ResultRow& base, const ResultRow& next) {
  if (base.verdict == next.verdict) {
    if (base.verdict == Verdict::pass) {
      return {Outcome::same, ""};
    }
    return {Outcome::same, fmt::format("{} in both: {}", to_string(next.verdict), first_line(next.reason))};
  }
  std::string note = fmt::format("{} -> {}", to_string(base.verdict), to_string(next.verdict));
  if (next.verdict != Verdict::pass) {
    note += fmt::format(": {}", first_line(next.reason));
  } else {
    note += fmt::format(" (BASE: {})", first_line(base.reason));
  }
  if (base.verdict == Verdict::pass && failed(next.verdict)) {
    return {Outcome::worse, note};
  }
  if (failed(base.verdict) && next.verdict == Verdict::pass) {
    return {Outcome::better, note};
  }
  return {Outcome::unsure, note};
}

MetricComparison one_side(const MetricResult& m, bool in_base) {
  MetricComparison c;
  c.name = m.name;
  c.unit = m.unit;
  c.better = m.better;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  (in_base ? c.base_n : c.new_n) = m.samples.size();
  c.base_median = in_base ? m.summary.median : nan;
  c.new_median = in_base ? nan : m.summary.median;
  c.outcome = Outcome::not_judged;
  c.note = in_base ? "only in BASE" : "only in NEW";
  return c;
}

RowComparison compare_rows(const ResultRow& base, const ResultRow& next, const CompareOptions& options) {
  RowComparison rc;
  rc.key = base;
  rc.key.metrics.clear();
  rc.base_verdict = base.verdict;
  rc.new_verdict = next.verdict;
  std::tie(rc.verdict_change, rc.note) = verdict_change(base, next);
  for (const MetricResult& m : base.metrics) {
    const MetricResult* other = next.metric(m.name);
    rc.metrics.push_back(other ? compare_metric(m, *other, options) : one_side(m, true));
  }
  for (const MetricResult& m : next.metrics) {
    if (!base.metric(m.name)) {
      rc.metrics.push_back(one_side(m, false));
    }
  }
  return rc;
}

RowComparison unmatched(const ResultRow& row, bool in_base) {
  RowComparison rc;
  rc.key = row;
  rc.key.metrics.clear();
  rc.presence = in_base ? Presence::base_only : Presence::new_only;
  (in_base ? rc.base_verdict : rc.new_verdict) = row.verdict;
  rc.verdict_change = Outcome::not_judged;
  rc.note = in_base ? "only in BASE" : "only in NEW";
  return rc;
}

Side side_of(const Results& r) {
  return {r.path.string(), r.format, r.rows.size(), r.notes};
}

}  // namespace

void OutcomeCounts::add(Outcome outcome) noexcept {
  switch (outcome) {
    case Outcome::same:
      ++same;
      break;
    case Outcome::better:
      ++better;
      break;
    case Outcome::worse:
      ++worse;
      break;
    case Outcome::unsure:
      ++unsure;
      break;
    case Outcome::not_judged:
      ++not_judged;
      break;
  }
}

std::vector<EnvironmentDifference> environment_differences(const std::vector<Fact>& base,
                                                           const std::vector<Fact>& next, bool one_sided) {
  const std::map<std::string, std::string> in_base(base.begin(), base.end());
  const std::map<std::string, std::string> in_next(next.begin(), next.end());
  std::vector<EnvironmentDifference> out;
  for (const auto& [label, value] : base) {
    const auto it = in_next.find(label);
    if (it != in_next.end() && it->second != value) {
      out.push_back({label, value, it->second});
    }
  }
  if (one_sided) {
    for (const auto& [label, value] : base) {
      if (!in_next.contains(label)) {
        out.push_back({label, value, "-"});
      }
    }
    for (const auto& [label, value] : next) {
      if (!in_base.contains(label)) {
        out.push_back({label, "-", value});
      }
    }
  }
  return out;
}

namespace {

// The options a run was given, without the program, the outputs and their values (where the results went is
// not how they were measured): {"transfers", "-n", "20", "--host-memory", "pageable"}.
std::vector<std::string> measuring_options(const std::vector<std::string>& argv,
                                           const CompareOptions& options) {
  const auto is = [](std::string_view a, std::string_view o) {
    return a == o || (a.starts_with(o) && a.size() > o.size() && a[o.size()] == '=');
  };
  std::vector<std::string> kept;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string_view a = argv[i];
    if (std::any_of(options.output_switches.begin(), options.output_switches.end(),
                    [&](const std::string& o) { return a == o; })) {
      continue;
    }
    const auto output = std::find_if(options.output_options.begin(), options.output_options.end(),
                                     [&](const std::string& o) { return is(a, o); });
    if (output != options.output_options.end()) {
      i += a == *output ? 1U : 0U;  // its value too
      continue;
    }
    kept.emplace_back(a);
  }
  return kept;
}

// The words of `a` that `b` lacks, in a's order: "--host-memory pageable", or "-" where there are none.
std::string only_in(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> out;
  std::multiset<std::string> left(b.begin(), b.end());
  for (const std::string& word : a) {
    if (const auto it = left.find(word); it != left.end()) {
      left.erase(it);
    } else {
      out.push_back(word);
    }
  }
  return out.empty() ? std::string("-") : fmt::format("{}", fmt::join(out, " "));
}

}  // namespace

std::optional<EnvironmentDifference> option_differences(const std::vector<std::string>& base,
                                                        const std::vector<std::string>& next,
                                                        const CompareOptions& options) {
  if (base.empty() || next.empty()) {
    return std::nullopt;  // a file that does not say (Google Benchmark JSON)
  }
  const std::vector<std::string> a = measuring_options(base, options);
  const std::vector<std::string> b = measuring_options(next, options);
  const std::string base_only = only_in(a, b);
  const std::string next_only = only_in(b, a);
  if (base_only == "-" && next_only == "-") {
    return std::nullopt;  // the same options, perhaps in another order
  }
  return EnvironmentDifference{"options (only here)", base_only, next_only};
}

Comparison compare_results(const Results& base, const Results& next, const CompareOptions& options) {
  if (base.kind != next.kind) {
    throw InputError(fmt::format("BASE '{}' is {} but NEW '{}' is {}: compare two files of one kind",
                                 base.path.string(), to_string(base.kind), next.path.string(),
                                 to_string(next.kind)));
  }
  Comparison c;
  c.base = side_of(base);
  c.next = side_of(next);
  c.options = options;
  c.environment =
      environment_differences(base.environment, next.environment, base.kind == ResultsKind::memstress);
  if (const std::optional<EnvironmentDifference> options_differ =
          option_differences(base.argv, next.argv, options)) {
    c.environment.push_back(*options_differ);
  }

  std::map<MatchKey, std::vector<std::size_t>> candidates;
  for (std::size_t j = 0; j < next.rows.size(); ++j) {
    candidates[key_of(next.rows[j], options)].push_back(j);
  }
  std::vector<bool> used(next.rows.size(), false);
  for (const ResultRow& row : base.rows) {
    std::optional<std::size_t> match;
    if (const auto it = candidates.find(key_of(row, options)); it != candidates.end()) {
      for (const std::size_t j : it->second) {
        if (!used[j] && ranks_agree(row, next.rows[j])) {
          match = j;
          break;
        }
      }
    }
    if (!match) {
      c.rows.push_back(unmatched(row, true));
      ++c.base_only;
      continue;
    }
    used[*match] = true;
    c.rows.push_back(compare_rows(row, next.rows[*match], options));
    ++c.rows_matched;
    c.rows_regressed += c.rows.back().verdict_change == Outcome::worse ? 1 : 0;
    c.rows_improved += c.rows.back().verdict_change == Outcome::better ? 1 : 0;
    bool worse = c.rows.back().verdict_change == Outcome::worse;
    for (const MetricComparison& m : c.rows.back().metrics) {
      c.metrics.add(m.outcome);
      worse = worse || m.outcome == Outcome::worse;
      c.metrics_with_values += std::isnan(m.base_median) || std::isnan(m.new_median) ? 0 : 1;
    }
    c.rows_worse += worse ? 1 : 0;
  }
  for (std::size_t j = 0; j < next.rows.size(); ++j) {
    if (!used[j]) {
      c.rows.push_back(unmatched(next.rows[j], false));
      ++c.new_only;
    }
  }
  const auto no_rows = [](const Results& r, std::string_view side) {
    return fmt::format("{} '{}' has no rows (a run that ended before its first case?)", side,
                       r.path.string());
  };
  if (base.rows.empty() || next.rows.empty()) {
    c.nothing_compared = base.rows.empty() && next.rows.empty()
                             ? fmt::format("{}; {}", no_rows(base, "BASE"), no_rows(next, "NEW"))
                         : base.rows.empty() ? no_rows(base, "BASE")
                                             : no_rows(next, "NEW");
  }
  if (c.rows_matched == 0 && !base.rows.empty() && !next.rows.empty()) {
    c.nothing_compared = "no rows matched: " + why_nothing_matched(base, next, options);
  } else if (c.rows_matched > 0 && c.metrics_with_values == 0 &&
             c.metrics.same + c.metrics.better + c.metrics.worse + c.metrics.unsure + c.metrics.not_judged >
                 0) {
    // Every metric of every matched row lacks a value on one side (a file of null medians): nothing was
    // measured to compare, which is not "no regression".
    c.nothing_compared =
        "no metric of the matched rows has a value on both sides (null medians: not measured)";
  } else if (options.match_any_gpu && c.rows_matched > 0 &&
             distinct(base.rows, &ResultRow::device) != distinct(next.rows, &ResultRow::device)) {
    c.notes.push_back(fmt::format("rows matched across GPU models ({}): BASE ran on {}, NEW on {}",
                                  options.match_any_gpu_flag, values_of(base.rows, &ResultRow::device),
                                  values_of(next.rows, &ResultRow::device)));
  }
  return c;
}

}  // namespace memstress::compare
