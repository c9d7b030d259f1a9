// The judge behind `memstress accept --from` (harness/accept/): a profile and a results file, each parsed as
// accept parses them, judged check by check with the run's own checks, and the verdict. The input is the
// profile's YAML, a line `#%results` (a YAML comment), then the results (a memstress.run/1 document or
// stream).
//
// The promises (Note [What a run promised] in harness/accept/input.hpp): judging what parsed never throws,
// and the verdict is never PASS where a row failed or errored, where the run did not complete (aborted, or a
// stream left running), where a rank its header promised has no row, or where a row is of a rank it does not
// have. A check that fails says how (measured bad, or missing).

#include "harness/accept/judge.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_target.hpp"
#include "harness/accept/input.hpp"
#include "harness/accept/profile.hpp"
#include "harness/accept/run_checks.hpp"
#include "harness/accept/verdict.hpp"
#include "harness/results/read.hpp"

namespace {

constexpr std::string_view kSeparator = "\n#%results\n";

// Whether `input` holds what a PASS may never be given (the promises above).
bool must_not_pass(const memstress::AcceptInput& input) {
  using memstress::Verdict;
  const memstress::JudgedRun& run = input.runs.front();
  if (run.status != "complete") {
    return true;
  }
  std::vector<bool> reported(static_cast<std::size_t>(run.ranks), false);
  for (const memstress::ResultRow& row : input.rows) {
    if (row.verdict == Verdict::fail || row.verdict == Verdict::error) {
      return true;
    }
    const int rank = row.rank.value_or(0);
    if (rank < 0 || rank >= run.ranks) {
      return true;
    }
    reported[static_cast<std::size_t>(rank)] = true;
  }
  return std::find(reported.begin(), reported.end(), false) != reported.end();
}

void judge(const memstress::Profile& profile, memstress::Results results) {
  using namespace memstress;
  AcceptInput input;
  add_run(input, std::move(results), "'fuzz.json'");
  std::vector<CheckOutcome> outcomes;
  for (const AcceptCheck& check : profile.checks) {
    outcomes.push_back(evaluate(check, input));
    const CheckOutcome& o = outcomes.back();
    fuzz::check(o.pass || o.skipped || o.failure != Failure::none,
                "a failed check says neither how it failed", o.detail.c_str());
    fuzz::check(!o.detail.empty(), "a check's line says nothing", check.name.c_str());
  }
  const std::vector<RunCheckFailure> run_failures = check_runs(input, /*one_model=*/true, "--any-gpu");
  const AcceptVerdict verdict = verdict_of(outcomes, run_failures.size(), "fuzz");
  if (verdict.code == ExitCode::ok) {
    fuzz::check(!must_not_pass(input), "PASS for a run that failed, did not complete, or lacks a rank's rows",
                verdict.line.c_str());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace memstress;
  const std::string_view input = fuzz::text(data, size);
  const std::size_t split = input.find(kSeparator);
  if (split == std::string_view::npos) {
    return 0;
  }
  const std::string yaml(input.substr(0, split));
  const std::string_view results_text = input.substr(split + kSeparator.size());
  return fuzz::run([&] {
    const Profile profile = parse_profile(yaml, "fuzz.yaml", "--train");
    Results results = parse_results(results_text);
    if (results.kind != ResultsKind::memstress) {
      return;  // accept refuses Google Benchmark JSON
    }
    fuzz::must("judging what parsed", [&] { judge(profile, std::move(results)); });
  });
}
