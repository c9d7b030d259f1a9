#pragma once

// JUnit XML for CI systems (Jenkins, GitLab, GitHub test reporters): one <testsuite> per workload, one
// <testcase> per row, named by its case label and allocator (and rank and device when a run has several).
// fail -> <failure>, error -> <error>, skip -> <skipped> with the reason; the row's wall time is the case's
// time. An aborted run adds an <error> testcase saying why, so a CI system never shows it as green.

#include <string>

#include "harness/results/row.hpp"

namespace memstress {

[[nodiscard]] std::string format_junit(const RunRecord& run);

}  // namespace memstress
