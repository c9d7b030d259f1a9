// `memstress compare`: judging a metric (Note [Judging a metric]), matching rows, verdict changes,
// environment differences and the printed forms.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <vector>

#include "harness/compare/compare.hpp"
#include "harness/compare/format.hpp"
#include "harness/core/error.hpp"
#include "harness/stats/summary.hpp"

namespace memstress::compare {
namespace {

MetricResult metric(std::string name, Better better, std::vector<double> samples, std::string unit = "us") {
  MetricResult m;
  m.name = std::move(name);
  m.unit = std::move(unit);
  m.better = better;
  m.summary = summarize(samples);
  m.samples = std::move(samples);
  return m;
}

std::vector<double> times(const std::vector<double>& v, double factor) {
  std::vector<double> out;
  out.reserve(v.size());
  for (const double x : v) {
    out.push_back(x * factor);
  }
  return out;
}

const std::vector<double> kLatency{10.1, 10.4, 9.9, 10.0, 10.2};  // us

MetricComparison judge(const MetricResult& base, const MetricResult& next, double threshold = 5.0) {
  CompareOptions options;
  options.threshold_pct = threshold;
  return compare_metric(base, next, options);
}

TEST(JudgeMetric, IdenticalSampleSetsAreSame) {
  const MetricComparison c =
      judge(metric("alloc", Better::lower, kLatency), metric("alloc", Better::lower, kLatency));
  EXPECT_EQ(c.outcome, Outcome::same);
  EXPECT_DOUBLE_EQ(*c.change_pct, 0.0);
  EXPECT_DOUBLE_EQ(*c.p_value, 1.0);
  EXPECT_EQ(c.base_n, 5U);
}

TEST(JudgeMetric, ClearTwentyPercentSlowdownWithFiveSamplesIsWorse) {
  const MetricComparison latency =
      judge(metric("alloc", Better::lower, kLatency), metric("alloc", Better::lower, times(kLatency, 1.2)));
  EXPECT_EQ(latency.outcome, Outcome::worse);
  EXPECT_NEAR(*latency.change_pct, 20.0, 1e-9);
  EXPECT_NEAR(*latency.p_value, 2.0 / 252.0, 1e-12);

  const std::vector<double> bandwidth{3724.9, 3751.6, 3778.6, 3685.7, 3765.1};
  const MetricComparison slower = judge(metric("fill", Better::higher, bandwidth, "GB/s"),
                                        metric("fill", Better::higher, times(bandwidth, 0.8), "GB/s"));
  EXPECT_EQ(slower.outcome, Outcome::worse);
  EXPECT_NEAR(*slower.change_pct, -20.0, 1e-9);
}

TEST(JudgeMetric, DirectionDecidesBetterOrWorse) {
  const std::vector<double> more = times(kLatency, 1.3);
  EXPECT_EQ(judge(metric("m", Better::higher, kLatency), metric("m", Better::higher, more)).outcome,
            Outcome::better);
  EXPECT_EQ(judge(metric("m", Better::lower, kLatency), metric("m", Better::lower, more)).outcome,
            Outcome::worse);
  EXPECT_EQ(judge(metric("m", Better::lower, more), metric("m", Better::lower, kLatency)).outcome,
            Outcome::better);
  EXPECT_EQ(judge(metric("m", Better::higher, more), metric("m", Better::higher, kLatency)).outcome,
            Outcome::worse);
  // No direction: the change is reported, not judged.
  const MetricComparison none =
      judge(metric("steps", Better::none, kLatency), metric("steps", Better::none, more));
  EXPECT_EQ(none.outcome, Outcome::not_judged);
  EXPECT_NEAR(*none.change_pct, 30.0, 1e-9);
  EXPECT_EQ(to_string(none.outcome), "-");
}

TEST(JudgeMetric, NoiseWithinThresholdIsSameEvenWhenSignificant) {
  // Wholly apart (p = 0.0079), but only 3% slower: not worth a failed job.
  const std::vector<double> tight{10.0, 10.05, 10.1, 10.02, 10.08};
  const MetricComparison c =
      judge(metric("alloc", Better::lower, tight), metric("alloc", Better::lower, times(tight, 1.03)));
  EXPECT_LT(*c.p_value, 0.01);
  EXPECT_EQ(c.outcome, Outcome::same);
  // Jitter of +-2% around the same values.
  const MetricComparison jitter = judge(metric("alloc", Better::lower, kLatency),
                                        metric("alloc", Better::lower, {10.3, 10.2, 9.8, 10.1, 10.0}));
  EXPECT_EQ(jitter.outcome, Outcome::same);
}

TEST(JudgeMetric, ExactlyAtTheThresholdIsNotBeyondIt) {
  const MetricComparison c =
      judge(metric("m", Better::lower, {100, 100, 100}), metric("m", Better::lower, {105, 105, 105}));
  EXPECT_EQ(c.outcome, Outcome::same);
}

TEST(JudgeMetric, BeyondThresholdButNotSignificantIsUnsure) {
  // Medians 10% apart, samples interleaved.
  const MetricComparison c = judge(metric("alloc", Better::lower, {10, 12, 14, 9, 11}),
                                   metric("alloc", Better::lower, {11, 13, 15, 9.5, 12.1}));
  EXPECT_GT(std::abs(*c.change_pct), 5.0);
  EXPECT_EQ(c.outcome, Outcome::unsure);
  EXPECT_NE(c.note.find("not significant"), std::string::npos);
}

TEST(JudgeMetric, TooFewSamplesIsUnsureBeyondTheThresholdOnly) {
  const MetricComparison big =
      judge(metric("m", Better::lower, {10, 10.1}), metric("m", Better::lower, {15, 15.1}));
  EXPECT_EQ(big.outcome, Outcome::unsure);
  EXPECT_FALSE(big.p_value);
  EXPECT_NE(big.note.find("too few samples"), std::string::npos);
  const MetricComparison small =
      judge(metric("m", Better::lower, {10, 10.1}), metric("m", Better::lower, {10.1, 10}));
  EXPECT_EQ(small.outcome, Outcome::same);
}

TEST(JudgeMetric, ThresholdIsAnOption) {
  const MetricResult base = metric("alloc", Better::lower, kLatency);
  const MetricResult next = metric("alloc", Better::lower, times(kLatency, 1.2));
  EXPECT_EQ(judge(base, next, 25.0).outcome, Outcome::same);
  EXPECT_EQ(judge(base, next, 19.0).outcome, Outcome::worse);
}

TEST(JudgeMetric, ChangeFromZeroHasNoPercentageButCounts) {
  const MetricComparison c = judge(metric("num_ooms", Better::lower, {0, 0, 0, 0, 0}),
                                   metric("num_ooms", Better::lower, {3, 3, 4, 3, 3}));
  EXPECT_FALSE(c.change_pct);
  EXPECT_EQ(c.outcome, Outcome::worse);
  const MetricComparison zero =
      judge(metric("num_ooms", Better::lower, {0, 0, 0}), metric("num_ooms", Better::lower, {0, 0, 0}));
  EXPECT_EQ(zero.outcome, Outcome::same);
}

TEST(JudgeMetric, TimeUnitsAreConverted) {
  const MetricComparison c = judge(metric("real_time", Better::lower, {1.0, 1.01, 0.99}, "us"),
                                   metric("real_time", Better::lower, {1000, 1010, 990}, "ns"));
  EXPECT_EQ(c.outcome, Outcome::same);
  EXPECT_DOUBLE_EQ(c.new_median, 1.0);
  EXPECT_EQ(c.unit, "us");
  const MetricComparison other =
      judge(metric("x", Better::lower, {1, 2, 3}, "GB/s"), metric("x", Better::lower, {1, 2, 3}, "us"));
  EXPECT_EQ(other.outcome, Outcome::unsure);
  EXPECT_NE(other.note.find("units differ"), std::string::npos);
  EXPECT_DOUBLE_EQ(*time_unit_factor("ms", "us"), 1000.0);
  EXPECT_FALSE(time_unit_factor("GB/s", "us"));
}

TEST(JudgeMetric, MediansWithoutSamplesAreSameOrUnsureAndOneLostInNewIsWorse) {
  MetricResult base = metric("real_time", Better::lower, {}, "ns");
  base.summary.median = 99.13;
  MetricResult next = base;
  EXPECT_EQ(judge(base, next).outcome, Outcome::same);
  next.summary.median = 99.13 * 1.2;
  EXPECT_EQ(judge(base, next).outcome, Outcome::unsure);
  next.summary.median = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(judge(base, next).outcome, Outcome::worse);   // measured in BASE, not in NEW: fail closed
  EXPECT_EQ(judge(next, base).outcome, Outcome::unsure);  // measured only in NEW
  base.summary.median = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(judge(base, next).outcome, Outcome::not_judged);
}

// Two runs of one build: draws from one distribution. However noisy, they must (almost) never come out
// WORSE. A fixed seed and our own transform of the raw engine output keep this deterministic.
TEST(JudgeMetric, IdenticalBuildsDoNotComeOutWorseByNoise) {
  std::mt19937_64 engine(20261121);
  const auto uniform = [&] { return (static_cast<double>(engine() >> 11) + 0.5) * 0x1.0p-53; };
  const auto lognormal = [&](double sigma) {
    const double z = std::sqrt(-2.0 * std::log(uniform())) * std::cos(2.0 * std::numbers::pi * uniform());
    return 10.0 * std::exp(sigma * z);
  };
  for (const double sigma : {0.02, 0.1, 0.3, 1.0}) {
    int worse = 0;
    constexpr int kTrials = 2000;
    for (int t = 0; t < kTrials; ++t) {
      std::vector<double> a;
      std::vector<double> b;
      for (int i = 0; i < 5; ++i) {
        a.push_back(lognormal(sigma));
        b.push_back(lognormal(sigma));
      }
      worse += judge(metric("m", Better::lower, a), metric("m", Better::lower, b)).outcome == Outcome::worse
                   ? 1
                   : 0;
    }
    // At most 1 in 252 draws is wholly apart on the bad side (p = 0.0079 < 0.01); allow 1%.
    EXPECT_LE(worse, kTrials / 100) << "sigma " << sigma;
  }
}

TEST(ParseThreshold, PositivePercentages) {
  EXPECT_DOUBLE_EQ(parse_threshold("5", "--threshold"), 5.0);
  EXPECT_DOUBLE_EQ(parse_threshold("2.5%", "--threshold"), 2.5);
  for (const char* bad : {"0", "-1", "abc", "", "%", "5%%", "inf", "nan", "5x"}) {
    EXPECT_THROW(static_cast<void>(parse_threshold(bad, "--threshold")), InputError) << bad;
  }
  try {
    static_cast<void>(parse_threshold("-3", "--threshold"));
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--threshold '-3'"), std::string::npos);
    EXPECT_EQ(e.exit_code(), ExitCode::bad_input);
  }
}

ResultRow row(std::string workload, std::string case_label, std::vector<MetricResult> metrics,
              Verdict verdict = Verdict::pass, std::optional<int> rank = 0) {
  ResultRow r;
  r.workload = std::move(workload);
  r.case_label = std::move(case_label);
  r.params = {{"bytes", r.case_label}};
  r.allocator = "caching";
  r.device = "NVIDIA H200";
  r.rank = rank;
  r.verdict = verdict;
  r.reason = verdict == Verdict::pass ? "" : "why";
  r.metrics = std::move(metrics);
  return r;
}

Results results(std::vector<ResultRow> rows, std::vector<Fact> env = {}) {
  Results r;
  r.path = "x.json";
  r.format = "memstress.run/1 document";
  r.rows = std::move(rows);
  r.environment = std::move(env);
  return r;
}

TEST(CompareResults, SameResultsAreSameAndNoRegression) {
  const Results r = results({row("smoke", "64M", {metric("alloc", Better::lower, kLatency)}),
                             row("smoke", "1G", {metric("alloc", Better::lower, kLatency)})});
  const Comparison c = compare_results(r, r, {});
  EXPECT_EQ(c.rows_matched, 2);
  EXPECT_EQ(c.metrics.same, 2);
  EXPECT_FALSE(c.regressed());
  EXPECT_TRUE(c.environment.empty());
}

TEST(CompareResults, RowsOnOneSideAreListedNotJudged) {
  const Results base = results({row("smoke", "64M", {}), row("smoke", "1G", {})});
  const Results next = results({row("smoke", "1G", {}), row("leak", "256M", {})});
  const Comparison c = compare_results(base, next, {});
  EXPECT_EQ(c.rows_matched, 1);
  EXPECT_EQ(c.base_only, 1);
  EXPECT_EQ(c.new_only, 1);
  ASSERT_EQ(c.rows.size(), 3U);
  EXPECT_EQ(c.rows[0].presence, Presence::base_only);
  EXPECT_EQ(c.rows[0].key.case_label, "64M");
  EXPECT_EQ(c.rows[2].presence, Presence::new_only);
  EXPECT_FALSE(c.regressed());
  const std::string table = format_table(c);
  EXPECT_NE(table.find("only in BASE: 1 row"), std::string::npos);
  EXPECT_NE(table.find("only in NEW: 1 row"), std::string::npos);
}

TEST(CompareResults, RowsMatchByEveryPartOfTheKey) {
  ResultRow other_gpu = row("smoke", "64M", {});
  other_gpu.device = "NVIDIA H100 80GB HBM3";
  ResultRow other_allocator = row("smoke", "64M", {});
  other_allocator.allocator = "direct";
  ResultRow other_params = row("smoke", "64M", {});
  other_params.params["pattern"] = "zeros";
  const Comparison c = compare_results(results({row("smoke", "64M", {})}),
                                       results({other_gpu, other_allocator, other_params}), {});
  EXPECT_EQ(c.rows_matched, 0);
  EXPECT_EQ(c.new_only, 3);
  // Nothing matched is nothing compared, never "no regression": exit 1, saying why.
  EXPECT_TRUE(c.failed());
  EXPECT_EQ(
      c.nothing_compared.rfind("no rows matched: the parameters differ: BASE's first case is `smoke 64M`", 0),
      0U)
      << c.nothing_compared;
  EXPECT_NE(c.nothing_compared.find("allocator and GPU model"), std::string::npos);
  EXPECT_NE(format_table(c).find("result: NOTHING COMPARED (no rows matched: "), std::string::npos);
}

// The H100 job against the H200 one matched 0 rows and printed "no regression", exit 0.
TEST(CompareResults, NoRowMatchedSaysWhyAndFails) {
  ResultRow h100 = row("smoke", "64M", {});
  h100.device = "NVIDIA H100 80GB HBM3";
  ResultRow h200 = row("smoke", "64M", {});
  h200.device = "NVIDIA H200";
  CompareOptions named;
  named.match_any_gpu_flag = "--match-any-gpu";  // the command's flag, named in the advice
  const Comparison models = compare_results(results({h100}), results({h200}), named);
  EXPECT_TRUE(models.failed());
  EXPECT_EQ(models.nothing_compared,
            "no rows matched: the GPU models differ: BASE has NVIDIA H100 80GB HBM3, NEW NVIDIA H200; rows "
            "match by "
            "GPU model too (--match-any-gpu compares across models on purpose)");

  CompareOptions any_gpu = named;
  any_gpu.match_any_gpu = true;
  const Comparison across = compare_results(results({h100}), results({h200}), any_gpu);
  EXPECT_EQ(across.rows_matched, 1);
  EXPECT_FALSE(across.failed());
  ASSERT_EQ(across.notes.size(), 1U);
  EXPECT_EQ(across.notes[0],
            "rows matched across GPU models (--match-any-gpu): BASE ran on NVIDIA H100 80GB HBM3, "
            "NEW on NVIDIA H200");

  const Comparison workloads =
      compare_results(results({row("smoke", "64M", {})}), results({row("oom", "x", {})}), {});
  EXPECT_EQ(workloads.nothing_compared, "no rows matched: the workloads differ: BASE has smoke, NEW oom");
  ResultRow direct = row("smoke", "64M", {});
  direct.allocator = "direct";
  const Comparison allocators = compare_results(results({row("smoke", "64M", {})}), results({direct}), {});
  EXPECT_NE(allocators.nothing_compared.find("the allocators differ: BASE has "), std::string::npos)
      << allocators.nothing_compared;
}

TEST(CompareResults, RanksMatchWhereBothHaveThem) {
  const Results base =
      results({row("smoke", "64M", {}, Verdict::pass, 0), row("smoke", "64M", {}, Verdict::pass, 1)});
  const Results next =
      results({row("smoke", "64M", {}, Verdict::pass, 1), row("smoke", "64M", {}, Verdict::fail, 0)});
  const Comparison c = compare_results(base, next, {});
  EXPECT_EQ(c.rows_matched, 2);
  EXPECT_EQ(c.rows_regressed, 1);
  EXPECT_EQ(*c.rows[0].key.rank, 0);  // rank 0 met rank 0, which failed
  EXPECT_EQ(c.rows[0].verdict_change, Outcome::worse);
  // A side without ranks (Google Benchmark) matches any.
  const Results rankless = results({row("smoke", "64M", {}, Verdict::pass, std::nullopt)});
  EXPECT_EQ(compare_results(rankless, base, {}).rows_matched, 1);
}

TEST(CompareResults, VerdictChanges) {
  const auto change = [](Verdict from, Verdict to) {
    const Comparison c =
        compare_results(results({row("w", "c", {}, from)}), results({row("w", "c", {}, to)}), {});
    return std::make_pair(c.rows[0].verdict_change, c.regressed());
  };
  EXPECT_EQ(change(Verdict::pass, Verdict::fail), std::make_pair(Outcome::worse, true));
  EXPECT_EQ(change(Verdict::pass, Verdict::error), std::make_pair(Outcome::worse, true));
  EXPECT_EQ(change(Verdict::fail, Verdict::pass), std::make_pair(Outcome::better, false));
  EXPECT_EQ(change(Verdict::pass, Verdict::skip), std::make_pair(Outcome::unsure, false));
  EXPECT_EQ(change(Verdict::skip, Verdict::skip), std::make_pair(Outcome::same, false));
  EXPECT_EQ(change(Verdict::fail, Verdict::fail), std::make_pair(Outcome::same, false));
  EXPECT_EQ(change(Verdict::fail, Verdict::error), std::make_pair(Outcome::unsure, false));
}

TEST(CompareResults, WorseMetricIsARegression) {
  const Comparison c =
      compare_results(results({row("w", "c", {metric("alloc", Better::lower, kLatency)})}),
                      results({row("w", "c", {metric("alloc", Better::lower, times(kLatency, 1.2))})}), {});
  EXPECT_EQ(c.metrics.worse, 1);
  EXPECT_TRUE(c.regressed());
  EXPECT_NE(format_table(c).find("result: REGRESSION (1 metric WORSE)"), std::string::npos);
  const nlohmann::json j = comparison_json(c);
  EXPECT_TRUE(j.at("regression").get<bool>());
  EXPECT_EQ(j.at("rows")[0].at("metrics")[0].at("verdict"), "WORSE");
  EXPECT_EQ(j.at("summary").at("metrics").at("worse"), 1);
}

TEST(CompareResults, MetricsOnOneSideAreListed) {
  const Comparison c =
      compare_results(results({row("w", "c", {metric("alloc", Better::lower, kLatency)})}),
                      results({row("w", "c", {metric("free", Better::lower, kLatency)})}), {});
  ASSERT_EQ(c.rows[0].metrics.size(), 2U);
  EXPECT_EQ(c.rows[0].metrics[0].note, "only in BASE");
  EXPECT_EQ(c.rows[0].metrics[1].note, "only in NEW");
  EXPECT_EQ(c.metrics.not_judged, 2);
  EXPECT_FALSE(c.regressed());
}

TEST(CompareResults, KindsMustAgree) {
  Results gbench = results({});
  gbench.kind = ResultsKind::google_benchmark;
  EXPECT_THROW(static_cast<void>(compare_results(results({}), gbench, {})), InputError);
}

TEST(CompareResults, EnvironmentDifferences) {
  const std::vector<Fact> base{{"driver", "580.159.04"}, {"NCCL", "2.28.3"}, {"GPU 0 ECC", "on"}};
  const std::vector<Fact> next{{"driver", "590.10"}, {"NCCL", "2.28.3"}, {"GPU 1 name", "NVIDIA H200"}};
  const std::vector<EnvironmentDifference> d = environment_differences(base, next, false);
  ASSERT_EQ(d.size(), 1U);
  EXPECT_EQ(d[0].what, "driver");
  EXPECT_EQ(d[0].base, "580.159.04");
  EXPECT_EQ(d[0].next, "590.10");
  // memstress results: a fact on one side only is a difference too.
  const std::vector<EnvironmentDifference> all = environment_differences(base, next, true);
  ASSERT_EQ(all.size(), 3U);
  EXPECT_EQ(all[1].what, "GPU 0 ECC");
  EXPECT_EQ(all[1].next, "-");
  EXPECT_EQ(all[2].what, "GPU 1 name");
  EXPECT_EQ(all[2].base, "-");

  const Comparison c = compare_results(results({}, base), results({}, next), {});
  const std::string table = format_table(c);
  EXPECT_NE(table.find("environment: 3 differences"), std::string::npos);
  EXPECT_NE(table.find("590.10"), std::string::npos);
  const Comparison same = compare_results(results({}, base), results({}, base), {});
  EXPECT_NE(format_table(same).find("environment: identical"), std::string::npos);
  EXPECT_TRUE(comparison_json(same).at("environment").at("identical").get<bool>());
}

// Where the results went is not how they were measured: the options the caller names as outputs are left out,
// with their values, and nothing else is.
TEST(CompareResults, OptionsDifferBesidesTheOutputsTheCallerNames) {
  CompareOptions options;
  options.output_options = {"--out", "-o"};
  options.output_switches = {"-q"};
  const std::vector<std::string> base{"memstress", "run", "transfers", "--out", "a.json", "-q", "-n", "20"};
  const std::vector<std::string> next{"memstress", "run", "transfers", "-o=b.json", "-n", "20", "--wide"};
  const std::optional<EnvironmentDifference> d = option_differences(base, next, options);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->base, "-");
  EXPECT_EQ(d->next, "--wide");
  // Named by no caller, an output is an option like any other.
  const std::optional<EnvironmentDifference> unnamed = option_differences(base, next, {});
  ASSERT_TRUE(unnamed.has_value());
  EXPECT_EQ(unnamed->base, "--out a.json -q");
}

TEST(FormatComparison, TableShowsEveryMetricWithItsChange) {
  const Comparison c = compare_results(
      results({row("smoke", "64M", {metric("alloc", Better::lower, kLatency)})}),
      results({row("smoke", "64M", {metric("alloc", Better::lower, times(kLatency, 1.01))})}), {});
  const std::string table = format_table(c);
  EXPECT_NE(table.find("every row: allocator caching, device NVIDIA H200"), std::string::npos);
  EXPECT_NE(table.find("METRIC"), std::string::npos);
  EXPECT_NE(table.find("+1.0%"), std::string::npos);
  EXPECT_NE(table.find("SAME"), std::string::npos);
  EXPECT_NE(table.find("result: no regression"), std::string::npos);
}

}  // namespace
}  // namespace memstress::compare
