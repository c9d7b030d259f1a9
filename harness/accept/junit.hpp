#pragma once

// The checks of an acceptance profile as JUnit XML (accept --junit): one <testcase> per check, with the
// same line as the text output and its parts (workload, metric, measured, unit, bound, GPU, failure) as
// properties, and one failing <testcase> per failed check of the run itself. The XML is written as run's
// (harness/run/junit.hpp), with its one escaper.

#include <string>
#include <utility>
#include <vector>

#include "harness/accept/judge.hpp"
#include "harness/accept/profile.hpp"
#include "harness/accept/run_checks.hpp"

namespace memstress {

[[nodiscard]] std::string format_accept_junit(
    const Profile& profile, const std::vector<std::pair<const AcceptCheck*, CheckOutcome>>& results,
    const std::vector<RunCheckFailure>& run_failures);

}  // namespace memstress
