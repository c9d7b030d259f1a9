#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "harness/core/atomic_file.hpp"
#include "harness/core/error.hpp"
#include "harness/results/sink.hpp"
#include "harness/run/format.hpp"
#include "temp_dir.hpp"

namespace memstress {
namespace {

namespace fs = std::filesystem;

using testing::slurp;
using testing::TempDir;

Row make_row(std::string workload, Verdict verdict) {
  Row row;
  row.workload = std::move(workload);
  row.params = {{"bytes", "64M"}, {"pattern", "random"}};
  row.allocator = "direct";
  row.device = DeviceRef{"sim:80G", "sim", 0, "simulated (80G)", "", ""};
  row.verdict = verdict;
  MetricResult m;
  m.name = "fill";
  m.unit = "GB/s";
  m.better = Better::higher;
  m.samples = {10, 12, 11};
  m.summary = summarize(m.samples);
  row.metrics.push_back(m);
  return row;
}

RunRecord header() {
  RunRecord run;
  run.tool_version = "0.1.0";
  run.git_sha = "abc";
  run.argv = {"memstress", "run"};
  run.started_at = utc_now_iso8601();
  return run;
}

TEST(ResultSink, StreamsRowsThenWritesFinalDocument) {
  const TempDir dir;
  const fs::path out = dir.path() / "run.json";
  ResultSink sink(header(), out, "--out");
  sink.append(make_row("smoke", Verdict::pass));
  // Before the end: the stream already holds the finished row, the final document does not exist.
  EXPECT_FALSE(fs::exists(out));
  const std::string partial = slurp(dir.path() / "run.jsonl");
  std::istringstream lines(partial);
  std::string line;
  std::vector<nlohmann::json> parsed;
  while (std::getline(lines, line)) {
    parsed.push_back(nlohmann::json::parse(line));
  }
  ASSERT_EQ(parsed.size(), 2U);
  EXPECT_EQ(parsed[0]["type"], "header");
  EXPECT_EQ(parsed[0]["schema"], kSchemaId);
  EXPECT_EQ(parsed[1]["type"], "row");
  EXPECT_EQ(parsed[1]["metrics"]["fill"]["median"], 11.0);

  sink.append(make_row("alloc-smoke", Verdict::fail));
  sink.finish(RunStatus::complete);
  const nlohmann::json doc = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(doc["status"], "complete");
  EXPECT_EQ(doc["rows"].size(), 2U);
  EXPECT_EQ(doc["summary"]["fail"], 1);
  EXPECT_EQ(doc["rows"][0]["case"], "bytes=64M pattern=random");
  EXPECT_EQ(doc["rows"][0]["params"]["bytes"], "64M");
  EXPECT_FALSE(doc["ended_at"].is_null());
  EXPECT_NE(slurp(dir.path() / "run.jsonl").find("\"type\":\"footer\""), std::string::npos);
}

TEST(ResultSink, AbortedRunKeepsFinishedRows) {
  const TempDir dir;
  const fs::path out = dir.path() / "aborted.json";
  ResultSink sink(header(), out, "--out");
  sink.append(make_row("smoke", Verdict::pass));
  sink.finish(RunStatus::aborted, "CUDA error: an illegal memory access");
  const nlohmann::json doc = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(doc["status"], "aborted");
  EXPECT_EQ(doc["abort_reason"], "CUDA error: an illegal memory access");
  EXPECT_EQ(doc["rows"].size(), 1U);
}

TEST(ResultSink, UnwritableOutIsBadInput) {
  try {
    ResultSink sink(header(), fs::path("/nonexistent-dir/x/run.json"), "--out");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--out"), std::string::npos);
  }
}

TEST(ResultSink, StreamPathNaming) {
  EXPECT_EQ(ResultSink::stream_path("a/run.json"), fs::path("a/run.jsonl"));
  EXPECT_EQ(ResultSink::stream_path("a/run.out"), fs::path("a/run.out.jsonl"));
}

TEST(ResultJson, MetricReadsBackAsWritten) {
  MetricResult m = make_row("smoke", Verdict::pass).metrics.front();
  m.summary.cv = std::numeric_limits<double>::quiet_NaN();  // written as null
  const nlohmann::json j = m;
  const auto back = j.get<MetricResult>();
  EXPECT_EQ(back.unit, "GB/s");
  EXPECT_EQ(back.better, Better::higher);
  EXPECT_EQ(back.samples, m.samples);
  EXPECT_EQ(back.summary.n, 3U);
  EXPECT_DOUBLE_EQ(back.summary.median, 11.0);
  EXPECT_TRUE(std::isnan(back.summary.cv));
  nlohmann::json bad = j;
  bad["better"] = "sideways";
  EXPECT_THROW(static_cast<void>(bad.get<MetricResult>()), InputError);
  EXPECT_EQ(verdict_from_string("skip"), Verdict::skip);
  EXPECT_EQ(verdict_from_string("passed"), std::nullopt);
  EXPECT_EQ(better_from_string("lower"), Better::lower);
  EXPECT_EQ(better_from_string(""), std::nullopt);
}

// The row names its headline metric where it has one; a row read back keeps it, a file without it reads as
// before, and a headline that names no metric of the row is refused.
TEST(ResultJson, TheHeadlineReadsBackAndMustNameAMetric) {
  Row row = make_row("smoke", Verdict::pass);
  nlohmann::json j = row;
  EXPECT_FALSE(j.contains("headline"));
  row.headline = row.metrics.front().name;
  j = row;
  EXPECT_EQ(j.at("headline"), row.headline);
  EXPECT_EQ(j.get<Row>().headline, row.headline);
  j["headline"] = "nosuch";
  EXPECT_THROW(static_cast<void>(j.get<Row>()), InputError);
}

TEST(AtomicFile, ReplacesWholeFileAndLeavesNoTemporary) {
  const TempDir dir;
  const fs::path p = dir.path() / "f.json";
  write_file_atomically(p, "first", "--out");
  write_file_atomically(p, "second", "--out");
  EXPECT_EQ(slurp(p), "second");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}), 1);
}

TEST(Format, TableShowsMetricsReasonsAndTotals) {
  RunRecord run = header();
  run.rows.push_back(make_row("smoke", Verdict::pass));
  Row skipped;
  skipped.workload = "smoke";
  skipped.params = {{"bytes", "1G"}};
  skipped.device.label = "sim:80G";
  skipped.verdict = Verdict::skip;
  skipped.reason = "needs a real GPU (running on the simulated device sim:80G)";
  run.rows.push_back(skipped);
  const std::string table = format_table(run);
  EXPECT_NE(table.find("WORKLOAD"), std::string::npos);
  EXPECT_NE(table.find("fill"), std::string::npos);
  EXPECT_NE(table.find("GB/s"), std::string::npos);
  EXPECT_NE(table.find("needs a real GPU"), std::string::npos);
  EXPECT_NE(table.find("2 cases: 1 passed, 0 failed, 1 skipped, 0 errors"), std::string::npos) << table;
}

TEST(Format, CsvQuotesAndHasOneLinePerMetric) {
  RunRecord run = header();
  Row row = make_row("smoke", Verdict::error);
  row.reason = "bad, \"quoted\"\nsecond line";
  run.rows.push_back(row);
  const std::string csv = format_csv(run);
  EXPECT_EQ(csv.rfind("workload,case,allocator", 0), 0U);
  EXPECT_NE(csv.find("\"bad, \"\"quoted\"\"\""), std::string::npos) << csv;
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 2);
}

TEST(Format, JsonIsTheRunDocument) {
  RunRecord run = header();
  run.rows.push_back(make_row("smoke", Verdict::pass));
  const nlohmann::json j = nlohmann::json::parse(format_run(run, OutputFormat::json));
  EXPECT_EQ(j["schema"], kSchemaId);
  EXPECT_EQ(j["rows"][0]["metrics"]["fill"]["unit"], "GB/s");
}

TEST(Format, ValuesForPeople) {
  EXPECT_EQ(format_value(2950.123), "2950");
  EXPECT_EQ(format_value(12.3456), "12.35");
  EXPECT_EQ(format_value(123456789.0), "123456789");
  EXPECT_EQ(format_value(0.0), "0");
  EXPECT_THROW(parse_output_format("yaml", "--format"), InputError);
}

}  // namespace
}  // namespace memstress
