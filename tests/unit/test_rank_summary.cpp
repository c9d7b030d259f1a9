// The cross-rank summary of a job's rows: min / median / max per case and metric, stragglers named.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "harness/results/rank_summary.hpp"
#include "harness/run/format.hpp"
#include "metric_fixture.hpp"

namespace memstress {
namespace {

Row rank_row(int rank, double value, Better better = Better::higher, std::string metric = "fill") {
  Row row;
  row.workload = "sizes";
  row.params = {{"bytes", "1M"}};
  row.allocator = "caching";
  row.rank = rank;
  row.device = DeviceRef{"sim:8G", "sim", 0, "simulated (8G)", "", ""};
  row.metrics.push_back(
      testing::metric_of(std::move(metric), better == Better::lower ? "us" : "GB/s", better, {value, value}));
  return row;
}

TEST(RankSummary, MinMedianMaxAcrossRanks) {
  const std::vector<Row> rows{rank_row(0, 100), rank_row(1, 95), rank_row(2, 105), rank_row(3, 98)};
  const auto spreads = summarize_ranks(rows, 0.10);
  ASSERT_EQ(spreads.size(), 1U);
  const RankSpread& s = spreads[0];
  EXPECT_EQ(s.workload, "sizes");
  EXPECT_EQ(s.case_label, "bytes=1M");
  EXPECT_EQ(s.metric, "fill");
  EXPECT_EQ(s.ranks, 4);
  EXPECT_DOUBLE_EQ(s.min, 95);
  EXPECT_EQ(s.min_rank, 1);
  EXPECT_DOUBLE_EQ(s.median, 99);  // the mean of the middle two, as numpy's median
  EXPECT_DOUBLE_EQ(s.max, 105);
  EXPECT_EQ(s.max_rank, 2);
  EXPECT_TRUE(s.stragglers.empty());  // all within 10 % of 99
}

TEST(RankSummary, HigherBetterStragglerIsBelowTheMedian) {
  const std::vector<Row> rows{rank_row(0, 100), rank_row(1, 80), rank_row(2, 101), rank_row(3, 130)};
  const auto spreads = summarize_ranks(rows, 0.10);
  ASSERT_EQ(spreads.size(), 1U);
  // median 100.5: rank 1 is 20.4 % below it; rank 3 is far above, which is better, not a straggler.
  ASSERT_EQ(spreads[0].stragglers.size(), 1U);
  EXPECT_EQ(spreads[0].stragglers[0].rank, 1);
  EXPECT_NEAR(spreads[0].stragglers[0].worse, (100.5 - 80) / 100.5, 1e-12);
}

TEST(RankSummary, LowerBetterStragglerIsAboveTheMedian) {
  const std::vector<Row> rows{rank_row(0, 10, Better::lower), rank_row(1, 12, Better::lower),
                              rank_row(2, 5, Better::lower)};
  const auto spreads = summarize_ranks(rows, 0.10);
  ASSERT_EQ(spreads.size(), 1U);
  ASSERT_EQ(spreads[0].stragglers.size(), 1U);
  EXPECT_EQ(spreads[0].stragglers[0].rank, 1);  // 20 % slower than the median 10; rank 2 is faster
}

TEST(RankSummary, ThresholdIsStrict) {
  const std::vector<Row> rows{rank_row(0, 100), rank_row(1, 90), rank_row(2, 100)};
  EXPECT_TRUE(summarize_ranks(rows, 0.10)[0].stragglers.empty());  // exactly 10 % worse: not more
  EXPECT_EQ(summarize_ranks(rows, 0.05)[0].stragglers.size(), 1U);
}

TEST(RankSummary, MetricsWithoutDirectionHaveNoStragglers) {
  const std::vector<Row> rows{rank_row(0, 1, Better::none), rank_row(1, 100, Better::none)};
  EXPECT_TRUE(summarize_ranks(rows, 0.10)[0].stragglers.empty());
}

TEST(RankSummary, SkipsErrorsAndNonFiniteValuesAndKeepsCasesApart) {
  Row error = rank_row(2, 1);
  error.verdict = Verdict::error;
  Row nan = rank_row(3, std::numeric_limits<double>::quiet_NaN());
  Row other = rank_row(0, 7, Better::higher, "copy");
  Row other_case = rank_row(1, 50);
  other_case.params = {{"bytes", "2M"}};
  const std::vector<Row> rows{rank_row(0, 100), rank_row(1, 100), error, nan, other, other_case};
  const auto spreads = summarize_ranks(rows, 0.10);
  ASSERT_EQ(spreads.size(), 3U);  // (1M, fill), (1M, copy), (2M, fill), in order of appearance
  EXPECT_EQ(spreads[0].ranks, 2);
  EXPECT_EQ(spreads[1].metric, "copy");
  EXPECT_EQ(spreads[2].case_label, "bytes=2M");
  EXPECT_EQ(count_ranks(rows), 4);
}

TEST(RankSummary, InTheDocumentAndTableOnlyWithSeveralRanks) {
  RunRecord run;
  run.rows = {rank_row(0, 100), rank_row(1, 50)};
  EXPECT_FALSE(run_json(run).contains("rank_summary"));
  EXPECT_EQ(format_table(run).find("Across ranks"), std::string::npos);
  run.ranks = 2;
  const nlohmann::json j = run_json(run)["rank_summary"];
  EXPECT_DOUBLE_EQ(j["straggler_threshold_pct"].get<double>(), 10.0);
  ASSERT_EQ(j["cases"].size(), 1U);
  EXPECT_DOUBLE_EQ(j["cases"][0]["median"].get<double>(), 75.0);
  ASSERT_EQ(j["cases"][0]["stragglers"].size(), 1U);
  EXPECT_EQ(j["cases"][0]["stragglers"][0]["rank"], 1);
  const std::string table = format_table(run);
  EXPECT_NE(table.find("Across ranks"), std::string::npos);
  EXPECT_NE(table.find("rank 1 (33% worse)"), std::string::npos);
  EXPECT_NE(table.find("1:sim:8G"), std::string::npos);           // RANK:DEVICE
  EXPECT_FALSE(j["cases"][0]["stragglers"][0].contains("node"));  // rows that name no node
}

TEST(RankSummary, AStragglerIsNamedWithItsNode) {
  RunRecord run;
  run.ranks = 3;
  run.rows = {rank_row(0, 100), rank_row(1, 100), rank_row(2, 50)};
  for (Row& row : run.rows) {
    row.device.node = row.rank < 2 ? "node-a" : "node-b";
  }
  const auto spreads = summarize_ranks(run.rows, 0.10);
  ASSERT_EQ(spreads[0].stragglers.size(), 1U);
  EXPECT_EQ(spreads[0].stragglers[0].node, "node-b");
  const nlohmann::json j = run_json(run);
  EXPECT_EQ(j["rank_summary"]["cases"][0]["stragglers"][0]["node"], "node-b");
  EXPECT_EQ(j["rows"][2]["device"]["node"], "node-b");
  EXPECT_EQ(j["rows"][2].get<Row>().device.node, "node-b");  // and it reads back
  EXPECT_NE(format_table(run).find("rank 2 on node-b (50% worse)"), std::string::npos) << format_table(run);
}

}  // namespace
}  // namespace memstress
