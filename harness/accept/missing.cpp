#include "harness/accept/missing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace memstress {
namespace {

// A case as a run ran it: its label and allocator.
using CaseKey = std::pair<std::string, std::string>;

// "transfers direction=h2d bytes=256M", or the workload alone for a case without parameters.
std::string case_text(const std::string& workload, const std::string& label) {
  return label.empty() ? workload : fmt::format("{} {}", workload, label);
}

// " (cudaErrorIllegalAddress ...)": the first line of a row's reason, where it gives one.
std::string reason_of(const ResultRow& row) {
  const std::string line = row.reason.substr(0, row.reason.find('\n'));
  return line.empty() ? std::string() : fmt::format(" ({})", line);
}

// The ranks of `run` without a row of each case of it that `check` matches. Named one rank a line, in rank
// order, with the cases it lacks; counted without naming past NamedList::kShown (a job of a million
// promised ranks names six).
void missing_ranks(const AcceptCheck& check, const AcceptInput& input, const JudgedRun& run, NamedList& out) {
  std::map<CaseKey, std::vector<int>> cases;  // the ranks with a row of each case, sorted
  const auto begin = input.rows.begin() + static_cast<std::ptrdiff_t>(run.first_row);
  for (auto row = begin; row != begin + static_cast<std::ptrdiff_t>(run.rows); ++row) {
    if (matches(*row, check)) {
      cases[{row->case_label, row->allocator}].push_back(row->rank.value_or(0));
    }
  }
  if (cases.empty()) {
    return;  // the run did not run what the check judges (another file did, or none: unmeasured)
  }
  std::vector<int> everywhere;  // the ranks with a row of every case
  for (auto& [key, ranks] : cases) {
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    if (&ranks == &cases.begin()->second) {
      everywhere = ranks;
    } else {
      std::vector<int> both;
      std::set_intersection(everywhere.begin(), everywhere.end(), ranks.begin(), ranks.end(),
                            std::back_inserter(both));
      everywhere = std::move(both);
    }
  }
  const auto complete = static_cast<std::size_t>(
      std::count_if(everywhere.begin(), everywhere.end(), [&](int r) { return r >= 0 && r < run.ranks; }));
  const std::size_t lacking_ranks = static_cast<std::size_t>(run.ranks) - complete;
  std::size_t named = 0;
  for (int rank = 0; rank < run.ranks && named < lacking_ranks && out.naming(); ++rank) {
    std::vector<const CaseKey*> lacks;
    for (const auto& [key, ranks] : cases) {
      if (!std::binary_search(ranks.begin(), ranks.end(), rank)) {
        lacks.push_back(&key);
      }
    }
    if (lacks.empty()) {
      continue;
    }
    const std::string who = rank_name(input, run, rank);
    out.add(lacks.size() == 1
                ? fmt::format("{} has no row of {}", who, case_text(check.workload, lacks.front()->first))
                : fmt::format("{} has no row of {} cases of {} (the first: {})", who, lacks.size(),
                              check.workload, case_text(check.workload, lacks.front()->first)));
    ++named;
  }
  out.count(lacking_ranks - named);
}

// The cases (labels) some row of which has the check's metric, null or not: those owe it on every GPU.
std::set<std::string> cases_giving(const AcceptCheck& check, const AcceptRows& rows) {
  std::set<std::string> out;
  for (const ResultRow& row : rows) {
    if (row.verdict != Verdict::skip && matches(row, check) && row.metric(check.metric) != nullptr) {
      out.insert(row.case_label);
    }
  }
  return out;
}

bool unfinished(const ResultRow& row) {
  return row.verdict == Verdict::fail || row.verdict == Verdict::error;
}

// A matched row that did not skip, and what it lacks of the check's value ("" where nothing).
std::string row_lacks(const AcceptCheck& check, const ResultRow& row, const std::set<std::string>& giving) {
  const std::string which = case_text(row.workload, row.case_label);
  const std::string ended = fmt::format("its {} row {}{}", which,
                                        row.verdict == Verdict::error ? "errored" : "failed", reason_of(row));
  if (check.metric == "verification.errors") {
    // A failed row's data errors are counted; a row that errored, or failed with none, left its count
    // unfinished.
    return row.verdict == Verdict::error || (row.verdict == Verdict::fail && row.errors == 0)
               ? ended + ": its data check did not finish"
               : std::string();
  }
  if (unfinished(row)) {
    return ended + ": its figures are not judged";
  }
  const MetricResult* metric = row.metric(check.metric);
  if (metric != nullptr && std::isfinite(metric->summary.median)) {
    return "";
  }
  if (not_measured_on(row, check)) {
    return "";  // this GPU does not give the figure: not judged here, not missing
  }
  if (metric != nullptr) {
    return fmt::format("{} is null in its {} row", check.metric, which);
  }
  return giving.contains(row.case_label) ? fmt::format("no {} in its {} row", check.metric, which) : "";
}

}  // namespace

std::optional<std::string> not_measured_on(const ResultRow& row, const AcceptCheck& check) {
  const std::string prefix = fmt::format("{}{} ", kNotMeasured, check.metric);
  for (const std::string& note : row.notes) {
    if (note.starts_with(prefix)) {
      return note.substr(kNotMeasured.size());
    }
  }
  return std::nullopt;
}

NamedList missing_values(const AcceptCheck& check, const AcceptInput& input) {
  NamedList out;
  for (const JudgedRun& run : input.runs) {
    missing_ranks(check, input, run, out);
  }
  if (check.metric == "verdict") {
    return out;  // every row it matched counts, whatever it holds
  }
  const std::set<std::string> giving = cases_giving(check, input.rows);
  for (const ResultRow& row : input.rows) {
    if (row.verdict == Verdict::skip || !matches(row, check)) {
      continue;
    }
    const std::string lacks = row_lacks(check, row, giving);
    if (!lacks.empty()) {
      out.add(fmt::format("{}: {}", row_gpu_name(input, row), lacks));
    }
  }
  return out;
}

}  // namespace memstress
