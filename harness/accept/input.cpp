#include "harness/accept/input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace memstress {

int AcceptInput::ranks() const noexcept {
  int most = 1;
  for (const JudgedRun& run : runs) {
    most = std::max(most, run.ranks);
  }
  return most;
}

const JudgedRun& AcceptInput::run_of(const ResultRow& row) const {
  const auto index = static_cast<std::size_t>(&row - rows.data());
  const auto run = std::find_if(runs.begin(), runs.end(), [&](const JudgedRun& r) {
    return index >= r.first_row && index < r.first_row + r.rows;
  });
  return run != runs.end() ? *run : runs.front();
}

void add_run(AcceptInput& input, Results results, std::string name) {
  JudgedRun run;
  run.name = std::move(name);
  run.ranks = results.ranks;
  run.status = results.status;
  run.abort_reason = results.abort_reason;
  for (const RankIdentity& id : results.identities) {
    run.rank_gpus[id.rank] = GpuIdentity{id.host, id.device_label, -1, id.device_uuid, id.device_pci_bus_id};
  }
  run.first_row = input.rows.size();
  run.rows = results.rows.size();
  input.rows.insert(input.rows.end(), std::make_move_iterator(results.rows.begin()),
                    std::make_move_iterator(results.rows.end()));
  input.runs.push_back(std::move(run));
}

AcceptInput complete_run(AcceptRows rows, int ranks) {
  AcceptInput input;
  JudgedRun run;
  run.name = "the run";
  run.ranks = std::max(1, ranks);
  run.rows = rows.size();
  input.rows = std::move(rows);
  input.runs.push_back(std::move(run));
  return input;
}

namespace {

std::string in_run(const AcceptInput& input, const JudgedRun& run) {
  return input.runs.size() > 1 ? fmt::format(" in {}", run.name) : std::string();
}

}  // namespace

std::string rank_name(const AcceptInput& input, const JudgedRun& run, int rank) {
  const auto begin = input.rows.begin() + static_cast<std::ptrdiff_t>(run.first_row);
  const auto end = begin + static_cast<std::ptrdiff_t>(run.rows);
  const auto row = std::find_if(begin, end, [&](const ResultRow& r) { return r.rank.value_or(0) == rank; });
  if (row != end) {
    return describe(row->gpu, rank) + in_run(input, run);
  }
  const auto header = run.rank_gpus.find(rank);
  return describe(header != run.rank_gpus.end() ? header->second : GpuIdentity{}, rank) + in_run(input, run);
}

std::string row_gpu_name(const AcceptInput& input, const ResultRow& row) {
  return describe(row.gpu, row.rank) + in_run(input, input.run_of(row));
}

}  // namespace memstress
