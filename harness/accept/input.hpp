#pragma once

// What `accept` judges: one or more runs (results files given to --from, or this job's own run), each with
// what its header promised and how it ended, and the rows of all of them, one run after another.
//
// Note [What a run promised]
// ==========================
// A verdict is computed from what the job promised, never from the rows that happen to be there. A run's
// header says how many ranks it had (`config.ranks`, or the ranks its environment lists; in a live run the
// job's world size) and how it ended (`status`, `abort_reason`). So:
//
// - every rank the header promises owes a row of every case its run ran (Note [What a check expects] in
//   missing.hpp): a rank with no row is a GPU left unmeasured, and its checks FAIL naming it, never skip;
// - a row of a rank the header does not have, a run that did not complete (aborted, or a stream still
//   `running`: no footer), a row that failed or errored, and results of two GPU models judged as one are
//   each a failure of the run itself (run_checks.hpp), whatever the checks measured;
// - NOT JUDGED is left for what this environment cannot run at all: a check that needs more ranks than the
//   job has, cases the harness skipped (no real GPU, too few GPUs), figures this GPU does not give.
//
// Several results files are judged as one job of several runs: each run's ranks owe rows of the cases that
// run ran, and a case one run lacks altogether is not owed by it (one file of copies, another of
// collectives).

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "harness/accept/measure.hpp"
#include "harness/results/read.hpp"

namespace memstress {

struct JudgedRun {
  std::string name;  // how lines name it: "'a.json'" (the file as given), or "this run"
  int ranks = 1;     // as its header says (a live run: the job's world size)
  std::string status = "complete";
  std::string abort_reason;
  std::map<int, GpuIdentity> rank_gpus;  // what the header says of each rank's GPU, where it says
  std::size_t first_row = 0;             // its rows: AcceptInput::rows[first_row, first_row + rows)
  std::size_t rows = 0;
};

struct AcceptInput {
  AcceptRows rows;  // every run's rows, one run after another
  std::vector<JudgedRun> runs;

  // The most ranks any run promised: a check that needs more is skipped.
  [[nodiscard]] int ranks() const noexcept;
  // The run `row` (an element of `rows`) belongs to.
  [[nodiscard]] const JudgedRun& run_of(const ResultRow& row) const;
};

// Adds the rows of `results` (load_results; a live run read back the same way) as a run named `name`.
void add_run(AcceptInput& input, Results results, std::string name);

// One complete run of `ranks` ranks with these rows (unit tests, and rows judged without a header).
[[nodiscard]] AcceptInput complete_run(AcceptRows rows, int ranks);

// The GPU of `rank` of `run` as lines name it: "host a, rank 1, cuda:1 (GPU-..., PCI ...)", from its rows or
// else its header ("rank 1, GPU ?" where neither says); with several runs, followed by " in 'b.json'".
[[nodiscard]] std::string rank_name(const AcceptInput& input, const JudgedRun& run, int rank);
// The GPU a row ran on, named as rank_name does.
[[nodiscard]] std::string row_gpu_name(const AcceptInput& input, const ResultRow& row);

}  // namespace memstress
