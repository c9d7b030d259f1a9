#include "harness/accept/verdict.hpp"

#include <fmt/format.h>

namespace memstress {

AcceptVerdict verdict_of(const std::vector<CheckOutcome>& checks, std::size_t run_failures,
                         const std::string& about) {
  std::size_t passed = 0;
  std::size_t skipped = 0;
  std::size_t not_run = 0;  // skipped because their cases were (no real GPU, too few GPUs)
  for (const CheckOutcome& o : checks) {
    passed += o.pass ? 1 : 0;
    skipped += o.skipped ? 1 : 0;
    not_run += o.not_run ? 1 : 0;
  }
  const std::size_t judged = checks.size() - skipped;
  const std::string also = fmt::format(
      "{}{}", skipped > 0 ? fmt::format(", {} skipped", skipped) : std::string(),
      run_failures > 0 ? fmt::format(", {} run check{} failed", run_failures, run_failures == 1 ? "" : "s")
                       : std::string());
  if (checks.empty() && run_failures == 0) {
    return {ExitCode::check_failed,
            fmt::format("verdict: NOT JUDGED (the profile has no checks: nothing to judge; {})", about)};
  }
  if (passed < judged || run_failures > 0) {
    return {ExitCode::check_failed,
            fmt::format("verdict: FAIL ({} of {} checks passed{}; {})", passed, judged, also, about)};
  }
  if (judged == 0 || not_run > 0) {
    return {ExitCode::env_missing,
            fmt::format(
                "verdict: NOT JUDGED ({} of {} checks judged, {} skipped{}: this device or job lacks what "
                "they need; {})",
                judged, checks.size(), skipped,
                not_run > 0 ? fmt::format(", {} of them because their cases were skipped", not_run)
                            : std::string(),
                about)};
  }
  return {ExitCode::ok,
          fmt::format("verdict: PASS ({} of {} checks passed{}; {})", passed, judged, also, about)};
}

}  // namespace memstress
