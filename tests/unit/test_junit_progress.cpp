// JUnit XML from a run's rows (verdicts, escaping, an aborted run) and the progress line's durations.

#include <gtest/gtest.h>

#include <string>

#include "harness/run/junit.hpp"
#include "harness/run/progress.hpp"

namespace memstress {
namespace {

Row row(std::string workload, Verdict verdict, std::string reason = {}) {
  Row r;
  r.workload = std::move(workload);
  r.params = {{"bytes", "1M"}};
  r.allocator = "caching";
  r.device.label = "sim:80G";
  r.verdict = verdict;
  r.reason = std::move(reason);
  r.seconds = 1.5;
  return r;
}

TEST(Junit, EachVerdictMapsToItsElementAndTextIsEscaped) {
  RunRecord run;
  run.started_at = "2026-11-21T00:00:00Z";
  run.rows = {row("smoke", Verdict::pass), row("smoke", Verdict::fail, "3 bad words <at> 0x10 & more"),
              row("transfers", Verdict::skip, "needs a real GPU"),
              row("oom", Verdict::error, "CUDA error \"x\"")};
  const std::string xml = format_junit(run);
  EXPECT_NE(
      xml.find("<testsuite name=\"memstress.smoke\" tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"0\" "
               "time=\"3.000\""),
      std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<failure message=\"3 bad words &lt;at&gt; 0x10 &amp; more\">"), std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<skipped message=\"needs a real GPU\"/>"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<error message=\"CUDA error &quot;x&quot;\">"), std::string::npos) << xml;
  EXPECT_NE(xml.find("name=\"bytes=1M [caching]\""), std::string::npos) << xml;
  EXPECT_EQ(xml.find("memstress.run"), std::string::npos);  // not aborted
}

TEST(Junit, AnAbortedRunIsAnErrorEvenWithNoRows) {
  RunRecord run;
  run.status = RunStatus::aborted;
  run.abort_reason = "rank 1 died";
  const std::string xml = format_junit(run);
  EXPECT_NE(xml.find("<error message=\"run aborted: rank 1 died\">"), std::string::npos) << xml;
}

TEST(Junit, RowsFromSeveralRanksAreNamedByRankAndDevice) {
  RunRecord run;
  run.rows = {row("smoke", Verdict::pass), row("smoke", Verdict::pass)};
  run.rows[1].rank = 1;
  run.rows[1].device.label = "cuda:1";
  const std::string xml = format_junit(run);
  EXPECT_NE(xml.find("name=\"bytes=1M [caching] rank 1 cuda:1\""), std::string::npos) << xml;
}

TEST(Progress, DurationsReadLikeAClock) {
  EXPECT_EQ(Progress::duration(3.44), "3.4s");
  EXPECT_EQ(Progress::duration(62), "1m02s");
  EXPECT_EQ(Progress::duration(3725), "1h02m");
}

}  // namespace
}  // namespace memstress
