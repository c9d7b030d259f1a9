#pragma once

// JUnit XML for CI systems (Jenkins, GitLab, GitHub test reporters): one <testsuite> per workload, one
// <testcase> per row, named by its case label and allocator (and rank and device when a run has several).
// fail -> <failure>, error -> <error>, skip -> <skipped> with the reason; the row's wall time is the case's
// time. An aborted run adds an <error> testcase saying why, so a CI system never shows it as green.

#include <string>
#include <string_view>

#include "harness/results/row.hpp"

namespace memstress {

// Text for XML (an attribute's value or an element's text): markup characters escaped, control characters
// and bytes that are not UTF-8 replaced. The one escaper of every JUnit report (run's, accept's).
[[nodiscard]] std::string xml_text(std::string_view text);

// `skips_fail_by` (run's --fail-on-skip; "": none): a skipped case is a <failure> saying so by its name, as
// the exit code says.
[[nodiscard]] std::string format_junit(const RunRecord& run, std::string_view skips_fail_by = {});

// A run that could not start (no GPU where one was required): one failing testcase `name` of suite `suite`
// with `reason`, so that CI shows a failed test rather than a missing report.
[[nodiscard]] std::string format_junit_not_run(const std::string& suite, const std::string& name,
                                               const std::string& reason);

}  // namespace memstress
