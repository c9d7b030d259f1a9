// The OpenMetrics exposition (harness/run/openmetrics.hpp, Note [memstress in OpenMetrics]): families once
// each, every series labelled, values escaped, one verdict held per case, a repeated case exported once,
// `# EOF` last. tests/cli/openmetrics_check.py reads the real output with Prometheus's own parsers.

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "harness/run/openmetrics.hpp"

namespace memstress {
namespace {

ExportedRow row(std::string case_label, double median, Verdict verdict = Verdict::pass) {
  ExportedRow r;
  r.host = "node01";
  r.gpu_uuid = "GPU-1";
  r.model = "NVIDIA H100 80GB HBM3";
  r.rank = 0;
  r.workload = "transfers";
  r.case_label = std::move(case_label);
  r.allocator = "caching";
  r.verdict = verdict;
  r.checked = 100;
  MetricResult m;
  m.name = "GB/s";
  m.unit = "GB/s";
  m.better = Better::higher;
  m.summary.n = 5;
  m.summary.median = median;
  m.summary.p10 = median - 1;
  m.summary.p90 = median + 1;
  r.metrics.push_back(m);
  return r;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

TEST(OpenMetrics, EveryFamilyOnceEverySeriesLabelledEofLast) {
  const std::string text = openmetrics_text({{"node01", "580.159.04", "0.1.0", "2026-11-21T14:03:05Z"}},
                                            {row("direction=h2d bytes=64M", 55.25)});
  for (const char* family :
       {"memstress_metric_median", "memstress_metric_p10", "memstress_metric_p90",
        "memstress_metric_repetitions", "memstress_case_verdict", "memstress_case_checked",
        "memstress_case_data_errors", "memstress_run_start_timestamp_seconds"}) {
    EXPECT_EQ(count(text, std::string("# TYPE ") + family + " gauge\n"), 1U) << family;
  }
  EXPECT_NE(
      text.find("memstress_metric_median{host=\"node01\",gpu_uuid=\"GPU-1\",model=\"NVIDIA H100 80GB HBM3\","
                "rank=\"0\",workload=\"transfers\",case=\"direction=h2d bytes=64M\",allocator=\"caching\","
                "metric=\"GB/s\",unit=\"GB/s\"} 55.25\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("verdict=\"pass\"} 1\n"), std::string::npos);
  EXPECT_EQ(count(text, "verdict=\"fail\"} 0\n") + count(text, "verdict=\"skip\"} 0\n") +
                count(text, "verdict=\"error\"} 0\n"),
            3U);
  EXPECT_NE(text.find("# UNIT memstress_run_start_timestamp_seconds seconds\n"), std::string::npos);
  EXPECT_NE(text.find("memstress_run_start_timestamp_seconds{host=\"node01\",driver=\"580.159.04\","
                      "memstress_version=\"0.1.0\"} 1795269785\n"),
            std::string::npos)
      << text;
  EXPECT_TRUE(text.ends_with("} 1795269785\n# EOF\n"));
  EXPECT_EQ(count(text, "# EOF"), 1U);
}

TEST(OpenMetrics, LabelValuesAreEscapedAndNanWritten) {
  ExportedRow r = row("name=\"a\\b\"\nnext", std::nan(""));
  const std::string text = openmetrics_text({}, {r});
  EXPECT_NE(text.find("case=\"name=\\\"a\\\\b\\\"\\nnext\""), std::string::npos) << text;
  EXPECT_NE(text.find("} NaN\n"), std::string::npos);
}

TEST(OpenMetrics, ARepeatedCaseIsOneSeriesTheLaterRowWins) {
  const std::string text = openmetrics_text({}, {row("bytes=64M", 10), row("bytes=64M", 20, Verdict::fail)});
  EXPECT_EQ(count(text, "memstress_metric_median{"), 1U);
  EXPECT_NE(text.find("} 20\n"), std::string::npos);
  EXPECT_NE(text.find("verdict=\"fail\"} 1\n"), std::string::npos);
}

TEST(OpenMetrics, RunStartsTheNewestPerHostAndUnreadableTimesLeftOut) {
  const std::string text = openmetrics_text({{"n", "580", "0.1.0", "2026-11-21T14:03:05Z"},
                                             {"n", "580", "0.1.0", "2026-11-22T00:00:00.5Z"},
                                             {"m", "580", "0.1.0", "yesterday"}},
                                            {});
  EXPECT_EQ(count(text, "memstress_run_start_timestamp_seconds{"), 1U);
  EXPECT_NE(text.find("} 1795305600.5\n"), std::string::npos) << text;
}

TEST(OpenMetrics, IsoTimesToEpochSeconds) {
  EXPECT_EQ(iso8601_to_epoch_seconds("1970-01-01T00:00:00Z"), 0.0);
  EXPECT_EQ(iso8601_to_epoch_seconds("2026-11-21T14:03:05Z"), 1795269785.0);
  EXPECT_EQ(iso8601_to_epoch_seconds("2026-11-21T14:03:05"), 1795269785.0);
  EXPECT_FALSE(iso8601_to_epoch_seconds("2026-02-30T00:00:00Z"));
  EXPECT_FALSE(iso8601_to_epoch_seconds("2026-11-21"));
  EXPECT_FALSE(iso8601_to_epoch_seconds("2026-11-21T25:00:00Z"));
  EXPECT_FALSE(iso8601_to_epoch_seconds("2026-11-21T14:03:05+01"));
}

}  // namespace
}  // namespace memstress
