#pragma once

// The verdict of `memstress accept` over its checks and the run's own (run_checks.hpp), and its exit code.
//
// Note [Nothing judged is not a pass]
// A pass needs at least one check judged, every check judged passing, none that could not be judged for
// want of hardware, and a run that passed its own checks:
//   PASS        exit 0
//   FAIL        exit 1: a check failed (measured bad, or missing), or the run itself did
//   NOT JUDGED  exit 1 when the profile has no checks (nothing to judge is not a pass); exit 3 when every
//               check was skipped, or a check's cases were skipped, for want of ranks or hardware
// A FAIL outranks NOT JUDGED: a GPU that failed on one check is not excused by another that could not run.

#include <cstddef>
#include <string>
#include <vector>

#include "harness/accept/judge.hpp"
#include "harness/core/exit_code.hpp"

namespace memstress {

struct AcceptVerdict {
  ExitCode code = ExitCode::ok;
  // "verdict: PASS (28 of 28 checks passed, 5 skipped; profile h100, NVIDIA H100 80GB HBM3, 1 rank)"
  std::string line;
};

// `about`: what was judged ("profile h100, NVIDIA H100 80GB HBM3, 1 rank"), the line's end.
[[nodiscard]] AcceptVerdict verdict_of(const std::vector<CheckOutcome>& checks, std::size_t run_failures,
                                       const std::string& about);

}  // namespace memstress
