#include "harness/accept/run_checks.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>

#include "harness/accept/named_list.hpp"

namespace memstress {
namespace {

// The rows of one run.
struct RunRows {
  AcceptRows::const_iterator first;
  AcceptRows::const_iterator last;
  [[nodiscard]] AcceptRows::const_iterator begin() const { return first; }
  [[nodiscard]] AcceptRows::const_iterator end() const { return last; }
};

RunRows rows_of(const AcceptInput& input, const JudgedRun& run) {
  const auto first = input.rows.begin() + static_cast<std::ptrdiff_t>(run.first_row);
  return {first, first + static_cast<std::ptrdiff_t>(run.rows)};
}

// The check `name` failed, naming what `found` lists; nullopt where it lists nothing.
std::optional<RunCheckFailure> failed_with(const char* name, const NamedList& found) {
  if (found.empty()) {
    return std::nullopt;
  }
  return RunCheckFailure{name, found.text()};
}

std::optional<RunCheckFailure> complete(const AcceptInput& input) {
  std::vector<std::string> ended;
  for (const JudgedRun& run : input.runs) {
    if (run.status == "complete") {
      continue;
    }
    if (run.status == "aborted") {
      ended.push_back(fmt::format("{} was aborted: {}", run.name,
                                  run.abort_reason.empty() ? "it gives no reason" : run.abort_reason));
    } else if (run.status == "running") {
      ended.push_back(
          fmt::format("{} did not finish (status running: a stream without its footer, from a run "
                      "that was killed or is still going)",
                      run.name));
    } else {
      ended.push_back(fmt::format("{} ended with status '{}'", run.name, run.status));
    }
  }
  if (ended.empty()) {
    return std::nullopt;
  }
  return RunCheckFailure{"run: complete", fmt::format("{}", fmt::join(ended, "; "))};
}

std::optional<RunCheckFailure> every_rank(const AcceptInput& input) {
  NamedList silent;
  for (const JudgedRun& run : input.runs) {
    std::vector<int> ranks;
    for (const ResultRow& row : rows_of(input, run)) {
      const int rank = row.rank.value_or(0);
      if (rank >= 0 && rank < run.ranks) {
        ranks.push_back(rank);
      }
    }
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    const std::size_t lacking = static_cast<std::size_t>(run.ranks) - ranks.size();
    std::size_t named = 0;
    for (int rank = 0; rank < run.ranks && named < lacking && silent.naming(); ++rank) {
      if (!std::binary_search(ranks.begin(), ranks.end(), rank)) {
        silent.add(fmt::format("{} has no row at all, in a run of {} ranks", rank_name(input, run, rank),
                               run.ranks));
        ++named;
      }
    }
    silent.count(lacking - named);
  }
  return failed_with("ranks: every rank reported", silent);
}

std::optional<RunCheckFailure> no_stranger(const AcceptInput& input) {
  NamedList strangers;
  for (const JudgedRun& run : input.runs) {
    std::map<int, std::size_t> rows;  // rank -> its rows
    for (const ResultRow& row : rows_of(input, run)) {
      const int rank = row.rank.value_or(0);
      if (rank < 0 || rank >= run.ranks) {
        ++rows[rank];
      }
    }
    for (const auto& [rank, count] : rows) {
      strangers.add(fmt::format("{} has {} row{} of rank {}, which its header does not have ({} rank{})",
                                run.name, count, count == 1 ? "" : "s", rank, run.ranks,
                                run.ranks == 1 ? "" : "s"));
    }
  }
  return failed_with("ranks: no row from outside the run", strangers);
}

std::optional<RunCheckFailure> none_failed(const AcceptInput& input) {
  NamedList failed;
  for (const ResultRow& row : input.rows) {
    if (row.verdict != Verdict::fail && row.verdict != Verdict::error) {
      continue;
    }
    if (!failed.naming()) {
      failed.count(1);
      continue;
    }
    const std::string reason = row.reason.substr(0, row.reason.find('\n'));
    failed.add(fmt::format("{}: {}{}{}: {}{}", row_gpu_name(input, row), row.workload,
                           row.case_label.empty() ? "" : " ", row.case_label, to_string(row.verdict),
                           reason.empty() ? std::string() : fmt::format(" ({})", reason)));
  }
  return failed_with("rows: none failed or errored", failed);
}

std::optional<RunCheckFailure> one_model(const AcceptInput& input, std::string_view any_gpu_flag) {
  const std::vector<GpuModel> models = gpu_models(input);
  if (models.size() < 2) {
    return std::nullopt;
  }
  std::vector<std::string> named;
  named.reserve(models.size());
  for (const GpuModel& m : models) {
    named.push_back(
        fmt::format("{} (in {})", m.name.empty() ? std::string("a GPU without a name") : m.name, m.run));
  }
  return RunCheckFailure{"inputs: one GPU model",
                         fmt::format("rows of {} GPU models: {}; a profile's thresholds are for one model "
                                     "({} judges them together)",
                                     models.size(), fmt::join(named, ", "), any_gpu_flag)};
}

}  // namespace

std::vector<GpuModel> gpu_models(const AcceptInput& input) {
  std::vector<GpuModel> models;
  for (const JudgedRun& run : input.runs) {
    for (const ResultRow& row : rows_of(input, run)) {
      const bool seen =
          std::any_of(models.begin(), models.end(), [&](const GpuModel& m) { return m.name == row.device; });
      if (!seen) {
        models.push_back({row.device, run.name});
      }
    }
  }
  return models;
}

std::vector<RunCheckFailure> check_runs(const AcceptInput& input, bool one_model_only,
                                        std::string_view any_gpu_flag) {
  std::vector<RunCheckFailure> out;
  for (std::optional<RunCheckFailure> failure :
       {complete(input), every_rank(input), no_stranger(input), none_failed(input),
        one_model_only ? one_model(input, any_gpu_flag) : std::nullopt}) {
    if (failure) {
      out.push_back(std::move(*failure));
    }
  }
  return out;
}

}  // namespace memstress
