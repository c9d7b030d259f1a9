#pragma once

// Acceptance profiles (`memstress accept`): what to run on a GPU of one model and which thresholds its
// results must meet, in YAML:
//
//   name: h100
//   gpu: NVIDIA H100 80GB HBM3          # the device model the thresholds are for
//   runs:                               # workloads and parameters, as `memstress run -p` takes them
//     - workload: transfers
//       params: {direction: "h2d,d2h", host: pinned, bytes: 256M}
//   checks:
//     - name: pinned H2D bandwidth
//       workload: transfers
//       where: {direction: h2d}          # rows whose parameters match (all rows of the workload if absent)
//       metric: GB/s                     # a metric of those rows, or verification.errors / verdict
//       golden: 52.6                     # a measured golden value (`--train` writes it) ...
//       factor: 0.75                     # ... and the share of it that passes (DCGM's 0.75 x golden)
//     - {name: memory integrity, workload: integrity, metric: verification.errors, max: 0}
//
// Note [Judging a check]. The measured value is the worst over the matched rows (the lowest for a metric
// where higher is better, the highest otherwise). With a golden value, a higher-is-better metric passes at
// >= factor x golden and a lower-is-better one at <= golden / factor; `min` and `max` are absolute bounds
// and may stand alone or beside a golden value. `verification.errors` is the sum of the rows' data errors
// and `verdict` the number of rows that did not pass; both want `max: 0`. A check that matches no row
// fails: a profile whose run did not produce what it checks is not a pass. A check whose matched rows were
// all skipped (their cases need a real GPU, more GPUs) is skipped, not judged. `accept` passes only when
// it judged something and all it judged passed: a profile with no checks exits 1, and one where a check
// could not be judged for want of ranks or hardware (every check skipped, or one whose cases were
// skipped) exits 3.

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/results/read.hpp"
#include "harness/run/params.hpp"

namespace memstress {

struct ProfileRun {
  std::string workload;
  std::vector<std::pair<std::string, std::string>> params;  // axis -> values ("v1,v2")
  int min_ranks = 1;     // left out of a run with fewer ranks (collectives need several)
  bool in_turn = false;  // with several ranks, one rank at a time (PlannedCase::in_turn)
};

struct AcceptCheck {
  std::string name;
  std::string workload;
  std::vector<std::pair<std::string, std::string>> where;
  std::string metric;
  std::optional<double> golden;
  double factor = 0.75;
  std::optional<double> min;
  std::optional<double> max;
  int min_ranks = 1;  // with fewer ranks the check is skipped (it says so), not failed
};

struct Profile {
  std::string name;
  std::string gpu;
  std::string description;
  std::vector<ProfileRun> runs;
  std::vector<AcceptCheck> checks;
};

// Throws InputError naming the file (and what is wrong) for anything that is not a valid profile.
[[nodiscard]] Profile load_profile(const std::filesystem::path& path);
[[nodiscard]] Profile parse_profile(const std::string& yaml, const std::string& name);
[[nodiscard]] std::string to_yaml(const Profile& profile);

struct CheckOutcome {
  bool pass = false;
  // Neither pass nor fail: the check needs more ranks than the run had, or (not_run) every row it matched
  // was skipped by the harness (its case needs a real GPU, more GPUs: the environment lacked it).
  bool skipped = false;
  bool not_run = false;
  std::optional<double> measured;
  std::string unit;    // the metric's ("GB/s"); "data errors" and "rows not passed" for the two counts
  std::string bound;   // ">= 41.27 GB/s (0.75 x golden 55.03 GB/s)", "<= 0 data errors"
  std::string where;   // the GPU the worst row ran on (describe), or the GPUs that failed the bound
  std::string detail;  // the whole line after the check's name: measured, bound, rows, GPU
};

// The rows a profile judges: from this run (result_row) or from results files, read and their
// types checked by load_results.
using AcceptRows = std::vector<ResultRow>;

// `rows`: from this run or from results files; `ranks`: how many ranks produced them (a check with a
// larger min_ranks is skipped). Rows of every rank count: a check takes the worst matched row, so one
// slow GPU fails it.
[[nodiscard]] CheckOutcome evaluate(const AcceptCheck& check, const AcceptRows& rows, int ranks = 1);
// A check train() left as it was, and why.
struct Untrained {
  std::string check;
  std::string why;  // "no matching row in these results", "measured 0: a golden value must be above 0"
};

// Sets every check's golden value to what `rows` measured (checks with no golden value and only absolute
// bounds are left alone). Returns the checks that matched no row, or measured a value that cannot be a
// golden value (0 or less: the profile would not load again): they keep what they had.
[[nodiscard]] std::vector<Untrained> train(Profile& profile, const AcceptRows& rows);

}  // namespace memstress
