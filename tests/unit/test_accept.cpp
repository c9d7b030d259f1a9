// Acceptance profiles: parsing (and its errors), judging checks against rows, training golden values, and
// failing closed on what a run promised and did not deliver.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "harness/accept/input.hpp"
#include "harness/accept/judge.hpp"
#include "harness/accept/profile.hpp"
#include "harness/accept/run_checks.hpp"
#include "harness/accept/train.hpp"
#include "harness/accept/verdict.hpp"
#include "harness/core/error.hpp"

namespace memstress {
namespace {

ResultRow row(const char* workload, std::map<std::string, std::string> params, double gbs,
              Better better = Better::higher, std::uint64_t errors = 0) {
  ResultRow r;
  r.workload = workload;
  r.params = std::move(params);
  r.checked = 10;
  r.errors = errors;
  MetricResult m;
  m.name = "GB/s";
  m.better = better;
  m.summary.median = gbs;
  r.metrics.push_back(std::move(m));
  return r;
}

const char* const kProfile = R"(
name: t
gpu: G
runs:
  - {workload: transfers, params: {direction: "h2d,d2h"}}
checks:
  - {name: h2d, workload: transfers, where: {direction: h2d}, metric: GB/s, golden: 50, factor: 0.8}
  - {name: any, workload: transfers, metric: GB/s, min: 30}
  - {name: errors, workload: transfers, metric: verification.errors, max: 0}
  - {name: untrained, workload: transfers, metric: GB/s, golden: null}
)";

TEST(AcceptProfile, ParsesRunsAndChecks) {
  const Profile p = parse_profile(kProfile, "t.yaml", "--train");
  EXPECT_EQ(p.gpu, "G");
  ASSERT_EQ(p.runs.size(), 1U);
  EXPECT_EQ(p.runs[0].params[0], (std::pair<std::string, std::string>{"direction", "h2d,d2h"}));
  ASSERT_EQ(p.checks.size(), 4U);
  EXPECT_EQ(p.checks[0].golden, 50);
  EXPECT_EQ(p.checks[0].factor, 0.8);
  EXPECT_FALSE(p.checks[3].golden.has_value());
}

TEST(AcceptProfile, BadProfilesNameTheFileAndTheProblem) {
  const auto message = [](const std::string& yaml) {
    try {
      static_cast<void>(parse_profile(yaml, "p.yaml", "--train"));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("[1, 2").find("p.yaml: not YAML"), std::string::npos);
  EXPECT_NE(message("name: x\ngpu: y\n").find("needs `runs` and `checks`"), std::string::npos);
  EXPECT_NE(message("name: x\ngpu: y\nruns: []\nchecks: [{name: c, workload: w, metric: m}]\n")
                .find("needs golden"),
            std::string::npos);
  EXPECT_NE(message("name: x\ngpu: y\nruns: []\nchecks: [{name: c, workload: w, metric: m, golden: fast}]\n")
                .find("`golden` must be a number"),
            std::string::npos);
  // Text that is not UTF-8 came back from --train --write as U+FFFD (fuzz/regressions/profile/): refused.
  EXPECT_EQ(message("name: a\xff\ngpu: y\nruns: []\nchecks: []\n"), "p.yaml: `name`: not UTF-8 text");
  EXPECT_EQ(message("name: x\ngpu: y\nruns: [{workload: w, params: {bytes: \"1\xc3G\"}}]\nchecks: []\n"),
            "p.yaml: runs[0].params.bytes: not UTF-8 text");
  EXPECT_EQ(message("name: caf\xc3\xa9\ngpu: y\nruns: []\nchecks: []\n"), "no error");  // UTF-8 is fine
  // A trailing '\r' was written back plain and read as the end of its line: control characters are refused
  // (tabs are text, and a description has lines).
  EXPECT_EQ(
      message("name: x\ngpu: y\nruns: []\nchecks: [{name: c, workload: w, metric: \"m\\r\", max: 0}]\n"),
      "p.yaml: checks[0]: `metric`: holds a control character");
  EXPECT_EQ(message("name: \"a\\tb\"\ngpu: y\ndescription: \"one\\ntwo\"\nruns: []\nchecks: []\n"),
            "no error");
}

TEST(AcceptProfile, AProfileWithWindowsLineEndingsReadsTheSame) {
  std::string crlf;
  for (const char c : std::string(kProfile)) {
    crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  }
  const Profile p = parse_profile(crlf, "t.yaml", "--train");
  ASSERT_EQ(p.checks.size(), 4U);
  EXPECT_EQ(p.checks[0].name, "h2d");
  EXPECT_EQ(p.runs[0].params[0].second, "h2d,d2h");
}

TEST(AcceptProfile, ChecksTakeTheWorstMatchedRowAndBothDirections) {
  const Profile p = parse_profile(kProfile, "t.yaml", "--train");
  const AcceptRows rows = {row("transfers", {{"direction", "h2d"}}, 45),
                           row("transfers", {{"direction", "h2d"}}, 41),
                           row("transfers", {{"direction", "d2h"}}, 31), row("smoke", {}, 1)};
  const CheckOutcome h2d = evaluate(p.checks[0], rows);
  EXPECT_TRUE(h2d.pass) << h2d.detail;  // 41 >= 0.8 x 50
  EXPECT_EQ(h2d.measured, 41);
  EXPECT_TRUE(evaluate(p.checks[1], rows).pass);   // worst 31 >= 30
  EXPECT_TRUE(evaluate(p.checks[2], rows).pass);   // no errors
  EXPECT_FALSE(evaluate(p.checks[3], rows).pass);  // no threshold yet
  const AcceptRows slow = {row("transfers", {{"direction", "h2d"}}, 39, Better::higher, 2)};
  EXPECT_FALSE(evaluate(p.checks[0], slow).pass);
  EXPECT_FALSE(evaluate(p.checks[2], slow).pass);  // 2 data errors
  const CheckOutcome none = evaluate(p.checks[0], AcceptRows{});
  EXPECT_FALSE(none.pass);
  EXPECT_NE(none.detail.find("no transfers row"), std::string::npos);
  // Lower is better: a latency passes at <= golden / factor.
  AcceptCheck latency{"lat", "transfers", {}, "GB/s", 10.0, 0.5, {}, {}};
  EXPECT_TRUE(evaluate(latency, {row("transfers", {}, 19, Better::lower)}).pass);
  EXPECT_FALSE(evaluate(latency, {row("transfers", {}, 21, Better::lower)}).pass);
}

// Note [Acceptance lines an operator can act on]: what was measured with its unit, the bound it had to meet
// and how that bound was set, and on which GPU (host, rank, index, UUID, PCI bus id): on a fail, every GPU
// that failed the bound on its own, with its value.
ResultRow on_gpu(ResultRow r, int rank, const char* host) {
  r.rank = rank;
  r.gpu = {host, fmt::format("cuda:{}", rank % 2), rank % 2, fmt::format("GPU-{}", rank),
           fmt::format("0000:1{}:00.0", rank)};
  r.metrics[0].unit = "GB/s";
  return r;
}

// A check of the GB/s of transfers rows held to `spread` percent of their median.
AcceptCheck spread_check(double spread, int min_ranks = 1) {
  AcceptCheck check;
  check.name = "h2d";
  check.workload = "transfers";
  check.metric = "GB/s";
  check.spread = spread;
  check.min_ranks = min_ranks;
  return check;
}

TEST(AcceptProfile, ALineNamesMeasuredValueUnitBoundAndTheGpusThatFailed) {
  const Profile p = parse_profile(kProfile, "t.yaml", "--train");
  AcceptRows rows;
  for (int rank = 0; rank < 4; ++rank) {
    rows.push_back(
        on_gpu(row("transfers", {{"direction", "h2d"}}, rank == 2 ? 26.85 : 52), rank, rank < 2 ? "a" : "b"));
  }
  const CheckOutcome fail = evaluate(p.checks[0], rows, 4);
  EXPECT_FALSE(fail.pass);
  EXPECT_EQ(fail.unit, "GB/s");
  EXPECT_EQ(fail.bound, ">= 40 GB/s (0.8 x golden 50 GB/s)");
  EXPECT_EQ(fail.where, "26.85 GB/s on host b, rank 2, cuda:0 (GPU-2, PCI 0000:12:00.0)");
  EXPECT_EQ(fail.failure, Failure::measured_bad);
  EXPECT_EQ(fail.detail,
            "measured bad: 26.85 GB/s (lowest of 4 rows), needs >= 40 GB/s (0.8 x golden 50 GB/s); failing: "
            "26.85 GB/s on host b, rank 2, cuda:0 (GPU-2, PCI 0000:12:00.0)");
  // A pass names the worst GPU; data errors name each GPU that had any, with its count.
  rows[2].metrics[0].summary.median = 51;
  rows[1].errors = 3;
  rows[3].errors = 1;
  const CheckOutcome pass = evaluate(p.checks[0], rows, 4);
  EXPECT_TRUE(pass.pass);
  EXPECT_NE(pass.detail.find("worst: 51 GB/s on host b, rank 2"), std::string::npos) << pass.detail;
  const CheckOutcome errors = evaluate(p.checks[2], rows, 4);
  EXPECT_FALSE(errors.pass);
  EXPECT_EQ(errors.detail,
            "measured bad: 4 data errors (total of 4 rows), needs <= 0 data errors; failing: 3 data errors "
            "on host a, "
            "rank 1, cuda:1 (GPU-1, PCI 0000:11:00.0); 1 data error on host b, rank 3, cuda:1 (GPU-3, PCI "
            "0000:13:00.0)");
  // One GPU: named once, without a value of its own.
  const CheckOutcome one = evaluate(p.checks[0], {rows[0], rows[0]}, 1);
  EXPECT_EQ(one.detail,
            "measured 52 GB/s (lowest of 2 rows), needs >= 40 GB/s (0.8 x golden 50 GB/s); on host a, rank "
            "0, cuda:0 "
            "(GPU-0, PCI 0000:10:00.0)");
}

TEST(AcceptProfile, HostAndPciBusIdComeFromTheRanksEnvironment) {
  std::vector<ResultRow> rows(2);
  rows[0].rank = 0;
  rows[0].gpu.uuid = "GPU-x";
  rows[1].rank = 1;
  rows[1].gpu.uuid = "GPU-y";
  const auto env = nlohmann::json::parse(R"({"ranks": [
    {"rank": 0, "host": {"name": "n0"}, "gpus": [{"uuid": "GPU-x", "pci_bus_id": "0000:01:00.0"}]},
    {"rank": 1, "host": {"name": "n1"}, "device": {"uuid": "GPU-y", "pci_bus_id": "0000:02:00.0"}, "gpus": 7}]})");
  add_gpu_identity(rows, env);
  EXPECT_EQ(describe(rows[0].gpu, rows[0].rank), "host n0, rank 0, GPU ? (GPU-x, PCI 0000:01:00.0)");
  EXPECT_EQ(rows[1].gpu.host, "n1");
  EXPECT_EQ(rows[1].gpu.pci_bus_id, "0000:02:00.0");  // from the rank's device where gpus is not a list
  add_gpu_identity(rows, nlohmann::json::parse(R"({"ranks": "none"})"));  // lenient: left as it was
  EXPECT_EQ(rows[1].gpu.host, "n1");
}

TEST(AcceptProfile, TrainingSetsGoldenValuesAndRoundTrips) {
  Profile p = parse_profile(kProfile, "t.yaml", "--train");
  const AcceptRows rows = {row("transfers", {{"direction", "h2d"}}, 52),
                           row("transfers", {{"direction", "d2h"}}, 48)};
  const std::vector<Untrained> untrained = train(p, rows);
  EXPECT_TRUE(untrained.empty());
  EXPECT_EQ(p.checks[0].golden, 52);
  EXPECT_EQ(p.checks[3].golden, 48);  // the worst row
  EXPECT_FALSE(p.checks[1].golden);   // absolute bounds only: left alone
  const Profile again = parse_profile(to_yaml(p), "trained.yaml", "--train");
  EXPECT_EQ(again.checks[0].golden, 52);
  EXPECT_EQ(again.checks[1].min, 30);
  EXPECT_EQ(again.checks[0].where, p.checks[0].where);
  Profile q = parse_profile(kProfile, "t.yaml", "--train");
  EXPECT_EQ(train(q, AcceptRows{}).size(), 2U);  // nothing to learn from
}

TEST(AcceptProfile, ChecksOfSeveralRanksAreSkippedInARunOfOneAndJudgedInALargerOne) {
  const char* const yaml = R"(
name: t
gpu: G
runs:
  - {workload: collectives, params: {bytes: 256M}, min_ranks: 2}
checks:
  - {name: busbw, workload: collectives, metric: GB/s, min: 40, min_ranks: 2}
)";
  const Profile p = parse_profile(yaml, "t.yaml", "--train");
  EXPECT_EQ(p.runs[0].min_ranks, 2);
  EXPECT_EQ(p.checks[0].min_ranks, 2);
  AcceptRows rows = {row("collectives", {}, 45), row("collectives", {}, 39)};
  rows[1].rank = 1;
  const CheckOutcome one = evaluate(p.checks[0], rows, 1);
  EXPECT_TRUE(one.skipped);
  EXPECT_FALSE(one.pass);
  EXPECT_NE(one.detail.find("needs 2 ranks (the run had 1)"), std::string::npos) << one.detail;
  const CheckOutcome two = evaluate(p.checks[0], rows, 2);
  EXPECT_FALSE(two.skipped);
  EXPECT_FALSE(two.pass);  // the worse rank (39) fails it
  EXPECT_EQ(two.failure, Failure::measured_bad) << two.detail;
  const Profile again = parse_profile(to_yaml(p), "again.yaml", "--train");
  EXPECT_EQ(again.runs[0].min_ranks, 2);
  EXPECT_EQ(again.checks[0].min_ranks, 2);
  EXPECT_THROW(
      static_cast<void>(parse_profile(
          "name: x\ngpu: y\nruns: []\nchecks: [{name: c, workload: w, metric: m, max: 0, min_ranks: 0}]\n",
          "p.yaml", "--train")),
      InputError);
}

TEST(AcceptProfile, RunsInTurnSurviveTrainingAndABadValueIsNamed) {
  const char* const yaml = R"(
name: t
gpu: G
runs:
  - {workload: transfers, params: {bytes: 256M}, in_turn: true}
  - {workload: smoke}
checks:
  - {name: h2d, workload: transfers, metric: GB/s, min: 40}
)";
  const Profile p = parse_profile(yaml, "t.yaml", "--train");
  EXPECT_TRUE(p.runs[0].in_turn);
  EXPECT_FALSE(p.runs[1].in_turn);
  const Profile again = parse_profile(to_yaml(p), "again.yaml", "--train");
  EXPECT_TRUE(again.runs[0].in_turn);
  EXPECT_FALSE(again.runs[1].in_turn);
  try {
    static_cast<void>(parse_profile("name: x\ngpu: y\nruns: [{workload: w, in_turn: often}]\nchecks: []\n",
                                    "p.yaml", "--train"));
    ADD_FAILURE() << "accepted in_turn: often";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("p.yaml: runs[0]: `in_turn` must be true or false"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace memstress

namespace memstress {
namespace {

// AcceptCheck::per_host: the p2p matrix is measured by each host's first rank; the skip rows of the other
// ranks of a measured host are not GPUs left unjudged, but a host with no measuring rank still is.
TEST(AcceptProfile, PerHostCheckCountsOneMeasuringRankAHost) {
  const Profile p = parse_profile(R"(
name: t
gpu: G
runs:
  - {workload: p2p}
checks:
  - {name: node, workload: p2p, metric: GB/s, min: 100, per_host: true}
  - {name: gpu, workload: p2p, metric: GB/s, min: 100}
)",
                                  "t.yaml", "--train");
  ASSERT_TRUE(p.checks[0].per_host);
  EXPECT_FALSE(p.checks[1].per_host);
  AcceptRows rows;
  for (int rank = 0; rank < 4; ++rank) {
    ResultRow r = on_gpu(row("p2p", {}, 390), rank, rank < 2 ? "a" : "b");
    if (rank % 2 == 1) {
      r.verdict = Verdict::skip;
      r.reason = "measured by its host's first rank";
      r.metrics.clear();
    }
    rows.push_back(std::move(r));
  }
  const CheckOutcome node = evaluate(p.checks[0], rows, 4);
  EXPECT_TRUE(node.pass) << node.detail;
  EXPECT_FALSE(node.skipped);
  const CheckOutcome gpu = evaluate(p.checks[1], rows, 4);
  EXPECT_FALSE(gpu.pass);
  EXPECT_TRUE(gpu.skipped) << gpu.detail;
  rows[2].verdict = Verdict::skip;  // host b measured nothing
  rows[2].metrics.clear();
  const CheckOutcome unmeasured = evaluate(p.checks[0], rows, 4);
  EXPECT_FALSE(unmeasured.pass);
  EXPECT_TRUE(unmeasured.skipped) << unmeasured.detail;
  EXPECT_THROW(static_cast<void>(parse_profile(R"(
name: t
gpu: G
runs: [{workload: p2p}]
checks: [{name: node, workload: p2p, metric: GB/s, min: 1, per_host: maybe}]
)",
                                               "t.yaml", "--train")),
               InputError);
}

}  // namespace
}  // namespace memstress

namespace memstress {
namespace {

// AcceptCheck::spread: the node's own median is the yardstick, so a quick check names the straggler of any
// GPU model; with one GPU there is nobody to lag behind.
TEST(AcceptProfile, SpreadNamesTheGpuBehindTheNodesMedian) {
  const Profile p = parse_profile(R"(
name: t
gpu: G
runs:
  - {workload: transfers}
checks:
  - {name: h2d, workload: transfers, metric: GB/s, spread: 10}
)",
                                  "t.yaml", "--train");
  ASSERT_TRUE(p.checks[0].spread.has_value());
  AcceptRows rows;
  for (int rank = 0; rank < 4; ++rank) {
    rows.push_back(on_gpu(row("transfers", {}, rank == 1 ? 46 : 55), rank, "a"));
  }
  const CheckOutcome fail = evaluate(p.checks[0], rows, 4);
  EXPECT_FALSE(fail.pass);
  EXPECT_EQ(fail.bound, ">= 49.5 GB/s (10% below the median of 4 rows, 55 GB/s)");
  EXPECT_EQ(fail.where, "46 GB/s on host a, rank 1, cuda:1 (GPU-1, PCI 0000:11:00.0)");
  rows[1].metrics[0].summary.median = 50;
  EXPECT_TRUE(evaluate(p.checks[0], rows, 4).pass);
  ResultRow alone = rows[1];
  alone.rank = 0;  // a run of one rank
  EXPECT_TRUE(evaluate(p.checks[0], {alone}, 1).pass);
  Profile trained = p;
  EXPECT_TRUE(train(trained, rows).empty());
  EXPECT_FALSE(trained.checks[0].golden.has_value());  // nothing to train: the bound is the node's own
  const auto bad = [](const char* spread) {
    return fmt::format(
        "name: t\ngpu: G\nruns: [{{workload: x}}]\nchecks: [{{name: c, workload: x, metric: m, "
        "spread: {}}}]\n",
        spread);
  };
  EXPECT_THROW(static_cast<void>(parse_profile(bad("0"), "t.yaml", "--train")), InputError);
  EXPECT_THROW(static_cast<void>(parse_profile(bad("100"), "t.yaml", "--train")), InputError);
}

// In a job of two nodes each node is held to its own median: node b's GPUs, all near 30 GB/s, are not
// stragglers of a job whose median node a lifts, and node a's slow GPU is named against node a's median.
TEST(AcceptProfile, SpreadHoldsEachNodeToItsOwnMedian) {
  const AcceptCheck check = spread_check(10);
  AcceptRows rows;
  for (int rank = 0; rank < 4; ++rank) {
    rows.push_back(on_gpu(row("transfers", {}, rank == 1 ? 46 : 55), rank, "a"));
  }
  for (int rank = 4; rank < 8; ++rank) {
    rows.push_back(on_gpu(row("transfers", {}, rank == 6 ? 29 : 30), rank, "b"));
  }
  const CheckOutcome fail = evaluate(check, rows, 8);
  EXPECT_FALSE(fail.pass);
  EXPECT_EQ(fail.where, "46 GB/s on host a, rank 1, cuda:1 (GPU-1, PCI 0000:11:00.0)");
  EXPECT_EQ(fail.bound,
            ">= 49.5 GB/s (10% below the median of 4 rows, 55 GB/s); each of 2 nodes held to its own "
            "median");
  EXPECT_NE(fail.detail.find("measured bad: 2 nodes, each held to its own median: node a: 46 GB/s"),
            std::string::npos)
      << fail.detail;
  EXPECT_EQ(fail.detail.find("node b"), std::string::npos) << fail.detail;
  rows[1].metrics[0].summary.median = 50;
  const CheckOutcome pass = evaluate(check, rows, 8);
  EXPECT_TRUE(pass.pass) << pass.detail;
  // node a's worst lags its median by 9.1%, node b's by 3.3%: a is named, with its value and bound
  EXPECT_NE(pass.detail.find("lagging its median most, node a: measured 50 GB/s"), std::string::npos)
      << pass.detail;
  EXPECT_EQ(pass.measured, 50);
  EXPECT_EQ(fail.measured, 46);
  rows[6].metrics[0].summary.median = 26;  // 13% below node b's median of 30
  const CheckOutcome b = evaluate(check, rows, 8);
  EXPECT_FALSE(b.pass);
  EXPECT_EQ(b.where, "26 GB/s on host b, rank 6, cuda:0 (GPU-6, PCI 0000:16:00.0)");
  // One GPU a node: no node has a median of its own, so the two are held to the median of both (38).
  AcceptRows two = {rows[1], rows[6]};
  two[0].rank = 0;  // a job of two ranks, one a node
  two[1].rank = 1;
  const CheckOutcome crowd = evaluate(check, two, 2);
  EXPECT_EQ(crowd.bound.find("each of"), std::string::npos) << crowd.bound;
  EXPECT_FALSE(crowd.pass);  // 26 is more than 10% below 38
}

}  // namespace
}  // namespace memstress

namespace memstress {
namespace {

// Fail closed: a GPU whose row errored before it measured the check's metric is not left out of the check.
TEST(AcceptProfile, ARowThatErroredBeforeMeasuringFailsTheCheckNamingItsGpu) {
  const Profile p = parse_profile(kProfile, "t.yaml", "--train");
  AcceptRows rows;
  for (int rank = 0; rank < 4; ++rank) {
    rows.push_back(on_gpu(row("transfers", {{"direction", "h2d"}}, 52), rank, "a"));
  }
  rows[3].verdict = Verdict::error;
  rows[3].reason = "cudaErrorIllegalAddress\nmore";
  rows[3].metrics.clear();
  const CheckOutcome out = evaluate(p.checks[0], rows, 4);
  EXPECT_FALSE(out.pass);
  EXPECT_FALSE(out.skipped);
  EXPECT_EQ(out.failure, Failure::missing);
  EXPECT_NE(
      out.detail.find("missing: host a, rank 3, cuda:1 (GPU-3, PCI 0000:13:00.0): its transfers row "
                      "errored (cudaErrorIllegalAddress): its figures are not judged; the others: measured"),
      std::string::npos)
      << out.detail;
  rows[3].verdict = Verdict::skip;  // skipped by the harness instead: not judged, not failed
  const CheckOutcome skipped = evaluate(p.checks[0], rows, 4);
  EXPECT_FALSE(skipped.pass);
  EXPECT_TRUE(skipped.skipped) << skipped.detail;
}

}  // namespace
}  // namespace memstress

namespace memstress {
namespace {

// Fail closed (Note [What a run promised], Note [What a check expects]): a value a promised GPU owes and does
// not give, and a run that did not deliver what its header promised, FAIL naming the GPU; never PASS, never
// NOT JUDGED. One regression test a way it once passed.

// The h2d check of kProfile (>= 0.8 x golden 50 GB/s) and a healthy row of it on each of `ranks` ranks of
// host a.
AcceptCheck h2d_check() {
  return parse_profile(kProfile, "t.yaml", "--train").checks[0];
}
AcceptRows healthy(int ranks) {
  AcceptRows rows;
  for (int rank = 0; rank < ranks; ++rank) {
    rows.push_back(on_gpu(row("transfers", {{"direction", "h2d"}}, 52), rank, "a"));
  }
  return rows;
}

bool starts_with(const std::string& text, const std::string& start) {
  return text.rfind(start, 0) == 0;
}

// The run check of that name among `input`'s failures, or "" where it passed.
std::string run_failure(const AcceptInput& input, const std::string& name, bool one_model = true) {
  for (const RunCheckFailure& f : check_runs(input, one_model, "--any-gpu")) {
    if (f.name == name) {
      return f.detail;
    }
  }
  return "";
}

TEST(AcceptFailClosed, OneRanksFigureNullOrAbsentIsMissing) {
  AcceptRows rows = healthy(2);
  ASSERT_TRUE(evaluate(h2d_check(), rows, 2).pass);
  rows[1].metrics[0].summary.median = std::numeric_limits<double>::quiet_NaN();  // written as null
  const CheckOutcome null = evaluate(h2d_check(), rows, 2);
  EXPECT_FALSE(null.pass);
  EXPECT_FALSE(null.skipped);
  EXPECT_EQ(null.failure, Failure::missing);
  EXPECT_TRUE(
      starts_with(null.detail,
                  "missing: host a, rank 1, cuda:1 (GPU-1, PCI 0000:11:00.0): GB/s is null in its transfers "
                  "row; the others: measured 52 GB/s (1 row), needs >= 40 GB/s"))
      << null.detail;
  rows[1].metrics.clear();
  const CheckOutcome absent = evaluate(h2d_check(), rows, 2);
  EXPECT_FALSE(absent.pass);
  EXPECT_NE(absent.detail.find("rank 1, cuda:1 (GPU-1, PCI 0000:11:00.0): no GB/s in its transfers row"),
            std::string::npos)
      << absent.detail;
}

TEST(AcceptFailClosed, ARankWithoutTheRowOrWithoutAnyRowIsMissing) {
  AcceptRows rows = healthy(2);
  rows.push_back(on_gpu(row("smoke", {}, 1), 1, "a"));
  rows.erase(rows.begin() + 1);  // rank 1 ran smoke, not the copy
  const CheckOutcome out = evaluate(h2d_check(), rows, 2);
  EXPECT_FALSE(out.pass);
  EXPECT_TRUE(starts_with(out.detail,
                          "missing: host a, rank 1, cuda:1 (GPU-1, PCI 0000:11:00.0) has no row of "
                          "transfers; the others: measured 52 GB/s"))
      << out.detail;
  EXPECT_EQ(run_failure(complete_run(rows, 2), "ranks: every rank reported"), "");
  // Rank 1 left no row at all: its header names its GPU.
  Results results;
  results.ranks = 2;
  results.status = "complete";
  RankIdentity second;
  second.rank = 1;
  second.host = "b";
  second.device_label = "cuda:0";
  second.device_uuid = "GPU-9";
  results.identities = {RankIdentity{}, second};
  results.rows = healthy(1);
  AcceptInput input;
  add_run(input, results, "'two.json'");
  const CheckOutcome silent = evaluate(h2d_check(), input);
  EXPECT_FALSE(silent.pass);
  EXPECT_TRUE(starts_with(silent.detail, "missing: host b, rank 1, cuda:0 (GPU-9) has no row of transfers"))
      << silent.detail;
  EXPECT_EQ(run_failure(input, "ranks: every rank reported"),
            "host b, rank 1, cuda:0 (GPU-9) has no row at all, in a run of 2 ranks");
}

TEST(AcceptFailClosed, ARowOfARankTheHeaderDoesNotHaveFailsTheRun) {
  AcceptRows rows = healthy(2);
  rows.push_back(on_gpu(row("transfers", {{"direction", "h2d"}}, 52), 7, "a"));
  const AcceptInput input = complete_run(rows, 2);
  EXPECT_EQ(run_failure(input, "ranks: no row from outside the run"),
            "the run has 1 row of rank 7, which its header does not have (2 ranks)");
  EXPECT_EQ(verdict_of({evaluate(h2d_check(), input)}, check_runs(input, true, "--any-gpu").size(), "t").code,
            ExitCode::check_failed);
}

TEST(AcceptFailClosed, AFailedOrErroredRowIsNotJudgedOnTheFiguresItCarries) {
  for (const Verdict verdict : {Verdict::error, Verdict::fail}) {
    AcceptRows rows = healthy(2);
    rows[1].verdict = verdict;
    rows[1].reason = "cudaErrorIllegalAddress: an illegal memory access was encountered";
    ASSERT_EQ(rows[1].metrics[0].summary.median, 52);  // its figures are still there
    const AcceptInput input = complete_run(rows, 2);
    const CheckOutcome out = evaluate(h2d_check(), input);
    EXPECT_FALSE(out.pass);
    EXPECT_EQ(out.failure, Failure::missing);
    EXPECT_TRUE(
        starts_with(out.detail, fmt::format("missing: host a, rank 1, cuda:1 (GPU-1, PCI 0000:11:00.0): its "
                                            "transfers row {} (cudaErrorIllegalAddress: an illegal memory "
                                            "access was encountered): its figures are not judged",
                                            verdict == Verdict::error ? "errored" : "failed")))
        << out.detail;
    EXPECT_NE(run_failure(input, "rows: none failed or errored").find("rank 1, cuda:1"), std::string::npos);
  }
}

TEST(AcceptFailClosed, ARunThatWasAbortedOrNeverFinishedFails) {
  AcceptInput input = complete_run(healthy(2), 2);
  const CheckOutcome passed = evaluate(h2d_check(), input);
  ASSERT_TRUE(passed.pass);
  EXPECT_EQ(verdict_of({passed}, check_runs(input, true, "--any-gpu").size(), "t").code, ExitCode::ok);
  input.runs[0].status = "aborted";
  input.runs[0].abort_reason = "XID 79 during the run (GPU has fallen off the bus)";
  EXPECT_EQ(run_failure(input, "run: complete"),
            "the run was aborted: XID 79 during the run (GPU has fallen off the bus)");
  const AcceptVerdict aborted = verdict_of({passed}, check_runs(input, true, "--any-gpu").size(), "t");
  EXPECT_EQ(aborted.code, ExitCode::check_failed);
  EXPECT_EQ(aborted.line, "verdict: FAIL (1 of 1 checks passed, 1 run check failed; t)");
  input.runs[0].status = "running";
  EXPECT_TRUE(starts_with(run_failure(input, "run: complete"), "the run did not finish (status running"));
}

TEST(AcceptFailClosed, ASpreadCheckWithOneGpusValueMissingFails) {
  const AcceptCheck spread = spread_check(10, /*min_ranks=*/2);
  AcceptRows rows = healthy(2);
  ASSERT_TRUE(evaluate(spread, rows, 2).pass);
  rows[1].metrics[0].summary.median = std::numeric_limits<double>::quiet_NaN();  // "the median of 1 rows"
  const CheckOutcome out = evaluate(spread, rows, 2);
  EXPECT_FALSE(out.pass);
  EXPECT_FALSE(out.skipped);
  EXPECT_NE(out.detail.find("rank 1, cuda:1 (GPU-1, PCI 0000:11:00.0): GB/s is null"), std::string::npos)
      << out.detail;
  rows.pop_back();  // and with its row gone
  EXPECT_NE(evaluate(spread, rows, 2).detail.find("rank 1, GPU ? has no row of transfers"),
            std::string::npos);
}

TEST(AcceptFailClosed, ResultsOfTwoGpuModelsFailWhicheverComesFirst) {
  const auto of_model = [](const char* model) {
    Results r;
    r.rows = healthy(1);
    r.rows[0].device = model;
    return r;
  };
  for (const bool h100_first : {true, false}) {
    AcceptInput input;
    add_run(input, of_model(h100_first ? "NVIDIA H100 80GB HBM3" : "NVIDIA H200"), "'first.json'");
    add_run(input, of_model(h100_first ? "NVIDIA H200" : "NVIDIA H100 80GB HBM3"), "'second.json'");
    const std::string models = run_failure(input, "inputs: one GPU model");
    EXPECT_NE(models.find("rows of 2 GPU models: "), std::string::npos) << models;
    EXPECT_NE(models.find("NVIDIA H100 80GB HBM3 (in '"), std::string::npos) << models;
    EXPECT_NE(models.find("NVIDIA H200 (in '"), std::string::npos) << models;
    EXPECT_NE(models.find("'first.json'"), std::string::npos) << models;
    EXPECT_NE(models.find("'second.json'"), std::string::npos) << models;
    EXPECT_EQ(run_failure(input, "inputs: one GPU model", /*one_model=*/false), "");  // --any-gpu
  }
}

// NOT JUDGED is for what the environment lacks; a promised rank without a row is not that.
TEST(AcceptFailClosed, SkippedRowsBesideAMissingRankFailNotSkip) {
  AcceptRows rows = healthy(1);
  rows[0].verdict = Verdict::skip;
  rows[0].reason = "needs a real GPU (running on the simulated device sim:8G)";
  rows[0].metrics.clear();
  EXPECT_TRUE(evaluate(h2d_check(), rows, 1).skipped);
  const CheckOutcome out = evaluate(h2d_check(), rows, 2);
  EXPECT_FALSE(out.skipped);
  EXPECT_FALSE(out.not_run);
  EXPECT_EQ(out.failure, Failure::missing);
  EXPECT_TRUE(
      starts_with(out.detail, "missing: rank 1, GPU ? has no row of transfers; the others: not judged"))
      << out.detail;
}

TEST(AcceptFailClosed, TheVerdictFailsOnAnyFailureAndIsNotJudgedOnlyForWantOfTheEnvironment) {
  CheckOutcome pass;
  pass.pass = true;
  CheckOutcome fail;
  CheckOutcome not_run;
  not_run.skipped = true;
  not_run.not_run = true;
  EXPECT_EQ(verdict_of({pass}, 0, "t").code, ExitCode::ok);
  EXPECT_EQ(verdict_of({pass, not_run}, 0, "t").code, ExitCode::env_missing);
  EXPECT_EQ(verdict_of({fail, not_run}, 0, "t").code, ExitCode::check_failed);
  EXPECT_EQ(verdict_of({pass, not_run}, 1, "t").code, ExitCode::check_failed);
  EXPECT_EQ(verdict_of({}, 1, "t").code, ExitCode::check_failed);
  EXPECT_EQ(verdict_of({}, 0, "t").line,
            "verdict: NOT JUDGED (the profile has no checks: nothing to judge; t)");
}

}  // namespace
}  // namespace memstress

namespace memstress {
namespace {

// Note [Bounds that mean something]: refused at load, naming the file, the check, the key and its line.
TEST(AcceptBounds, DegenerateBoundsAreRefusedAtLoad) {
  const auto error_of = [](const std::string& bounds) {
    try {
      static_cast<void>(
          parse_profile(fmt::format("name: x\ngpu: y\nruns: []\nchecks:\n  - {{name: c, workload: "
                                    "w, metric: m, {}}}\n",
                                    bounds),
                        "p.yaml", "--train"));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(
      error_of("golden: 1e-320"),
      "p.yaml: checks[0] (c): golden must be a number from 1e-09 to 1e+18, not 1e-320 (line 5) (train it: "
      "--train)");
  EXPECT_EQ(
      error_of("golden: 1e300"),
      "p.yaml: checks[0] (c): golden must be a number from 1e-09 to 1e+18, not 1e+300 (line 5) (train it: "
      "--train)");
  EXPECT_EQ(
      error_of("golden: 50, factor: 1e-300"),
      "p.yaml: checks[0] (c): factor must be in [0.01, 1] (the share of golden that passes), not 1e-300 "
      "(line 5)");
  EXPECT_NE(error_of("golden: 50, factor: 0.001").find("factor must be in [0.01, 1]"), std::string::npos);
  EXPECT_NE(error_of("golden: 50, factor: 1.5").find("factor must be in [0.01, 1]"), std::string::npos);
  EXPECT_EQ(
      error_of("min: -1"),
      "p.yaml: checks[0] (c): min must be 0 or more (no figure a check judges is below 0), not -1 (line 5)");
  EXPECT_NE(error_of("max: -0.5").find("(c): max must be 0 or more"), std::string::npos);
  EXPECT_NE(error_of("min: 1e-320").find("(c): min must be 0 or a normal number, not 1e-320"),
            std::string::npos);
  EXPECT_NE(error_of("max: 1e300").find("(c): max must be at most 1e+18, not 1e+300"), std::string::npos);
  EXPECT_NE(error_of("min: .inf").find("`min` must be a finite number"), std::string::npos);
  EXPECT_EQ(error_of("min: 5, max: 3"),
            "p.yaml: checks[0] (c): min 5 is above max 3: nothing could pass (line 5)");
  for (const char* fine : {"golden: 1e-3", "golden: 2.5e12, factor: 0.01", "min: 0", "max: 0",
                           "min: 0, max: 0", "min: 0.999, max: 1", "golden: 55.0253, factor: 1"}) {
    EXPECT_EQ(error_of(fine), "no error") << fine;
  }
}

TEST(AcceptBounds, TheShippedProfilesLoad) {
  for (const char* name : {"h100", "h100-quick", "h200", "h200-quick"}) {
    EXPECT_NO_THROW(static_cast<void>(
        load_profile(fmt::format("{}/profiles/{}.yaml", MEMSTRESS_SOURCE_DIR, name), "--profile", "--train")))
        << name;
  }
}

}  // namespace
}  // namespace memstress
