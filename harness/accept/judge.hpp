#pragma once

// A profile's check judged on a run's rows (`memstress accept`).
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

#include <optional>
#include <string>

#include "harness/accept/measure.hpp"
#include "harness/accept/profile.hpp"

namespace memstress {

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

// A value as accept's lines give it: "55.1 GB/s", "1.582M ops/s", "1.5 GiB" (a byte count in human units),
// "0 data errors", "0.9369" (a ratio or share); `digits` significant digits. `db train` words its floors so.
[[nodiscard]] std::string with_unit(double v, const std::string& unit, int digits = 4);

// `rows`: from this run or from results files; `ranks`: how many ranks produced them (a check with a
// larger min_ranks is skipped). Rows of every rank count: a check takes the worst matched row, so one
// slow GPU fails it.
[[nodiscard]] CheckOutcome evaluate(const AcceptCheck& check, const AcceptRows& rows, int ranks = 1);

}  // namespace memstress
