#pragma once

// A profile's check judged on a run's rows (`memstress accept`).
//
// Note [Judging a check]. The measured value is the worst over the matched rows (the lowest for a metric
// where higher is better, the highest otherwise). With a golden value, a higher-is-better metric passes at
// >= factor x golden and a lower-is-better one at <= golden / factor; `min` and `max` are absolute bounds
// and may stand alone or beside a golden value. `verification.errors` is the sum of the rows' data errors
// and `verdict` the number of rows that did not pass; both want `max: 0`.
//
// A check fails closed, in one of two ways, each its own words at the start of the line:
// - `measured bad:` a value it judged is outside its bound ("FAIL  h2d: measured bad: 26.85 GB/s (lowest of
//   4 rows), needs >= 40 GB/s ...; failing: 26.85 GB/s on host b, rank 2, ...");
// - `missing:` a value it was owed is not there (Note [What a check expects] in missing.hpp): a promised
//   rank without the row, a row that failed or errored, a null figure, or no row at all ("FAIL  h2d:
//   missing: host b, rank 1, cuda:1 (...) has no row of transfers direction=h2d ...; the others: measured
//   ..."). A check with both says both, the bad values first.
// A check whose matched rows were all skipped (their cases need a real GPU, more GPUs) is skipped, not
// judged, unless a promised rank has no row at all: that is missing. `accept` passes only when it judged
// something and all it judged passed, and the run itself passed its own checks (run_checks.hpp); the
// verdict and exit codes: verdict.hpp.

#include <optional>
#include <string>
#include <string_view>

#include "harness/accept/input.hpp"
#include "harness/accept/measure.hpp"
#include "harness/accept/profile.hpp"

namespace memstress {

// How a check failed: a value outside its bound, or a value it was owed and lacks.
enum class Failure { none, measured_bad, missing };
[[nodiscard]] std::string_view to_string(Failure failure) noexcept;  // "", "measured bad", "missing"

struct CheckOutcome {
  bool pass = false;
  // Neither pass nor fail: the check needs more ranks than the run had, or (not_run) every row it matched
  // was skipped by the harness (its case needs a real GPU, more GPUs: the environment lacked it).
  bool skipped = false;
  bool not_run = false;
  Failure failure = Failure::none;  // when neither passed nor skipped
  std::optional<double> measured;
  std::string unit;    // the metric's ("GB/s"); "data errors" and "rows not passed" for the two counts
  std::string bound;   // ">= 41.27 GB/s (0.75 x golden 55.03 GB/s)", "<= 0 data errors"
  std::string where;   // the GPU the worst row ran on (describe), or the GPUs that failed the bound
  std::string detail;  // the whole line after the check's name: measured, bound, rows, GPU
};

// A value as accept's lines give it: "55.1 GB/s", "1.582M ops/s", "1.5 GiB" (a byte count in human units),
// "0 data errors", "0.9369" (a ratio or share); `digits` significant digits. `db train` words its floors so.
[[nodiscard]] std::string with_unit(double v, const std::string& unit, int digits = 4);

// `input`: this run's or results files' rows, with what each run promised (a check needing more ranks than
// any run had is skipped). Rows of every rank count: a check takes the worst matched row, so one slow GPU
// fails it, and one GPU without its value fails it too.
[[nodiscard]] CheckOutcome evaluate(const AcceptCheck& check, const AcceptInput& input);
// The same on the rows of one complete run of `ranks` ranks.
[[nodiscard]] CheckOutcome evaluate(const AcceptCheck& check, const AcceptRows& rows, int ranks = 1);

}  // namespace memstress
