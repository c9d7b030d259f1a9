#pragma once

// `memstress compare BASE NEW`: two results files of one kind, their rows matched by workload, case,
// parameters, allocator and GPU model (and rank where both have one), every metric judged (Note
// [Judging a metric], metric_compare.hpp), verdict changes of rows, rows on one side only, and what
// differs in the environment. A comparison is a regression when a metric is WORSE or a row that passed
// in BASE fails or errors in NEW; the command then exits 1.

#include <optional>
#include <string>
#include <vector>

#include "harness/compare/metric_compare.hpp"
#include "harness/results/read.hpp"

namespace memstress::compare {

enum class Presence { both, base_only, new_only };

struct RowComparison {
  ResultRow key;  // BASE's row where there is one (its metrics are not used), else NEW's
  Presence presence = Presence::both;
  std::optional<Verdict> base_verdict;
  std::optional<Verdict> new_verdict;
  // The row's own verdicts side by side: pass -> fail or error is WORSE (a regression), fail or error ->
  // pass BETTER, a change to or from skip UNSURE, no change SAME.
  Outcome verdict_change = Outcome::same;
  std::string note;                       // the reasons behind a verdict that is not a pass
  std::vector<MetricComparison> metrics;  // a metric on one side only is listed with a note
};

struct EnvironmentDifference {
  std::string what;
  std::string base;
  std::string next;
};

struct OutcomeCounts {
  int same = 0, better = 0, worse = 0, unsure = 0, not_judged = 0;
  void add(Outcome outcome) noexcept;
  [[nodiscard]] int total() const noexcept { return same + better + worse + unsure + not_judged; }
};

struct Side {
  std::string path;
  std::string format;
  std::size_t rows = 0;
  std::vector<std::string> notes;
};

struct Comparison {
  Side base;
  Side next;
  CompareOptions options;
  std::vector<EnvironmentDifference> environment;  // environment_differences()
  std::vector<RowComparison> rows;                 // BASE's order, then rows only in NEW
  std::vector<std::string> notes;
  OutcomeCounts metrics;  // the metrics of matched rows (one on one side only: not judged)
  // rows_regressed: from pass to fail or error; rows_worse: matched rows with a metric WORSE or so regressed.
  int rows_matched = 0, rows_regressed = 0, rows_improved = 0, base_only = 0, new_only = 0, rows_worse = 0;
  int metrics_with_values = 0;  // metrics of matched rows with a median on both sides

  // Set when BASE or NEW has no rows (a run that ended before its first case, a document whose rows are
  // empty): nothing was compared, which is not "no regression". Says which side.
  std::string nothing_compared;

  [[nodiscard]] bool regressed() const noexcept { return metrics.worse > 0 || rows_regressed > 0; }
  // The command's verdict: a regression, or nothing compared (exit 1 either way).
  [[nodiscard]] bool failed() const noexcept { return regressed() || !nothing_compared.empty(); }
};

// The options two runs were given, where they differ (besides where their results went: options'
// output_options and output_switches): a difference of how they measured, listed with the environment's.
[[nodiscard]] std::optional<EnvironmentDifference> option_differences(const std::vector<std::string>& base,
                                                                      const std::vector<std::string>& next,
                                                                      const CompareOptions& options);

// Throws InputError when the two are of different kinds.
Comparison compare_results(const Results& base, const Results& next, const CompareOptions& options);

// Differences between two lists of facts, in BASE's order: the labels both have, with different values;
// with `one_sided`, also labels only one side has (the other shown as "-"), after them. memstress results
// are compared with one_sided (their facts come from a fixed list, so one there and not here is news: a
// variable set for one run only, a GPU more); Google Benchmark contexts without (their keys are whatever
// the benchmark binary added, so only the keys both have are compared).
std::vector<EnvironmentDifference> environment_differences(const std::vector<Fact>& base,
                                                           const std::vector<Fact>& next, bool one_sided);

}  // namespace memstress::compare
