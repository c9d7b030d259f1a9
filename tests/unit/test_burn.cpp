// The burn's parts that need no GPU: durations, profiles, the judge of each interval (Note [Judging a burn]),
// the interval plan, and a whole soak on the simulated device whose memory stays flat.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <string>

#include "harness/burn/duration.hpp"
#include "harness/burn/interval_row.hpp"
#include "harness/burn/judge.hpp"
#include "harness/burn/loop.hpp"
#include "harness/burn/profile.hpp"
#include "harness/burn/sim_engine.hpp"
#include "harness/core/error.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/planted_faults.hpp"
#include "harness/dist/world.hpp"
#include "harness/env/telemetry.hpp"
#include "harness/memory/backend.hpp"
#include "harness/run/session.hpp"
#include "suites/support/cublas_library.hpp"

namespace memstress {
namespace {

TEST(BurnDuration, ReadsUnitsAndRefusesWhatIsNoDuration) {
  EXPECT_EQ(parse_duration("90", "--duration", 1, kMaxBurnSeconds), 90);
  EXPECT_EQ(parse_duration("15m", "--duration", 1, kMaxBurnSeconds), 900);
  EXPECT_EQ(parse_duration("1.5h", "--duration", 1, kMaxBurnSeconds), 5400);
  EXPECT_EQ(parse_duration("7d", "--duration", 1, kMaxBurnSeconds), kMaxBurnSeconds);
  for (const char* bad : {"0", "-5", "nan", "inf", "-inf", "8d", "1e999", "", "m", "5x", "0x10", " 5"}) {
    EXPECT_THROW(static_cast<void>(parse_duration(bad, "--duration", 1, kMaxBurnSeconds)), InputError) << bad;
  }
  try {
    static_cast<void>(parse_duration("nan", "--duration", 1, kMaxBurnSeconds));
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--duration 'nan'"), std::string::npos) << e.what();
  }
}

TEST(BurnProfile, ShippedShapeLoadsAndBadValuesAreRefused) {
  const BurnProfile p = parse_burn_profile(
      "name: x\ngpu: G\nduration: 10m\ninterval: 30\nmemory: 0.8\ndrift_pct: 5\nlag_pct: 7\n"
      "allowed_clock_reasons: [idle, sw_power_cap]\ngolden: {memory.GB/s: {golden: 2600, factor: 0.9}}\n",
      "x.yaml");
  EXPECT_EQ(p.duration_s, 600);
  EXPECT_EQ(p.interval_s, 30);
  EXPECT_EQ(p.allowed_clock_reasons, 0x5U);
  ASSERT_EQ(p.golden.size(), 1U);
  EXPECT_EQ(p.golden[0].factor, 0.9);
  for (const char* bad :
       {"drift: 5\n", "interval: 61\n", "memory: 1.5\n", "golden: {memory.GB/s: {golden: 1e-320}}\n",
        "golden: {memory.GB/s: {golden: 10, factor: 1e-300}}\n", "golden: {nope: {golden: 1}}\n",
        "allowed_clock_reasons: [hw_thermal2]\n", "duration: 0\n", "name: a\nname: b\n", "[1, 2]\n"}) {
    EXPECT_THROW(static_cast<void>(parse_burn_profile(bad, "bad.yaml")), InputError) << bad;
  }
}

TEST(BurnPlan, WholeIntervalsOfAtMostTheInterval) {
  const IntervalPlan a = plan_intervals(900, 60);
  EXPECT_EQ(a.count, 15);
  EXPECT_EQ(a.seconds, 60);
  const IntervalPlan b = plan_intervals(100, 60);
  EXPECT_EQ(b.count, 2);
  EXPECT_EQ(b.seconds, 50);
}

// An interval's row of one GPU, as interval_row makes it.
Row row_of(int rank, int interval, double memory, std::uint64_t bf16 = 0xaa, std::string node = "n0") {
  IntervalInputs in;
  in.index = interval;
  in.seconds = 1;
  in.began_s = interval;
  in.work.memory_bytes = memory * 1e9;
  in.work.h2d_bytes = 50e9;
  in.work.d2h_bytes = 50e9;
  in.work.bf16_flop = 600e12;
  in.work.fp64_flop = 50e12;
  in.work.bf16_seconds = 1;
  in.work.fp64_seconds = 1;
  in.work.bf16_hashes = {bf16};
  in.work.fp64_hashes = {0xbb};
  in.gemm_library = "lib 1";
  Row r = interval_row(in);
  r.rank = rank;
  r.device.label = "cuda:0";
  r.device.name = "GPU X";
  r.device.uuid = "GPU-" + std::to_string(rank);
  r.device.node = std::move(node);
  return r;
}

std::vector<std::string> checks(const std::vector<BurnFinding>& found) {
  std::vector<std::string> out;
  out.reserve(found.size());
  for (const BurnFinding& f : found) {
    out.push_back(std::to_string(f.rank) + ":" + f.check);
  }
  return out;
}

TEST(BurnJudge, HealthyIntervalsOfFourGpusPass) {
  BurnJudge judge(default_burn_profile(), 4);
  for (int k = 0; k < 5; ++k) {
    std::vector<Row> rows;
    rows.reserve(4);
    for (int r = 0; r < 4; ++r) {
      rows.push_back(row_of(r, k, 2900 + 10 * r));
    }
    EXPECT_TRUE(judge.judge_interval(rows).empty()) << k;
  }
  EXPECT_TRUE(judge.finish().empty());
  EXPECT_FALSE(judge.failed());
  EXPECT_EQ(judge.verdict_json("PASS")["gpus"].size(), 4U);
}

TEST(BurnJudge, TheGemmVoteNamesTheOneGpuOutOfFourAndATieFailsBoth) {
  BurnJudge four(default_burn_profile(), 4);
  std::vector<Row> rows;
  rows.reserve(4);
  for (int r = 0; r < 4; ++r) {
    rows.push_back(row_of(r, 0, 2900, r == 2 ? 0xdead : 0xaa));
  }
  EXPECT_EQ(checks(four.judge_interval(rows)), std::vector<std::string>{"2:gemm.bf16"});
  EXPECT_EQ(rows[2].verdict, Verdict::fail);
  EXPECT_EQ(rows[0].verdict, Verdict::pass);
  BurnJudge two(default_burn_profile(), 2);
  std::vector<Row> pair{row_of(0, 0, 2900, 0xaa), row_of(1, 0, 2900, 0xab)};
  EXPECT_EQ(checks(two.judge_interval(pair)), (std::vector<std::string>{"0:gemm.bf16", "1:gemm.bf16"}));
}

TEST(BurnJudge, AGpuVotesAgainstItsOwnFirstResult) {
  BurnJudge judge(default_burn_profile(), 1);
  std::vector<Row> first{row_of(0, 0, 2900, 0xaa)};
  EXPECT_TRUE(judge.judge_interval(first).empty());
  std::vector<Row> later{row_of(0, 1, 2900, 0xab)};
  const auto found = judge.judge_interval(later);
  ASSERT_EQ(checks(found), std::vector<std::string>{"0:gemm.bf16"});
  EXPECT_NE(found[0].detail.find("differs from this GPU's first"), std::string::npos) << found[0].detail;
}

TEST(BurnJudge, DriftFromTheSteadyStateAndLagBehindTheNodeFail) {
  BurnJudge judge(default_burn_profile(), 3);
  for (int k = 0; k < 4; ++k) {
    std::vector<Row> rows{row_of(0, k, 2900), row_of(1, k, 2900), row_of(2, k, k == 3 ? 1500 : 2900)};
    const auto found = judge.judge_interval(rows);
    if (k < 3) {
      EXPECT_TRUE(found.empty()) << k;
    } else {
      EXPECT_EQ(checks(found), (std::vector<std::string>{"2:drift", "2:lag"}));
    }
  }
}

TEST(BurnJudge, ADropThatLastsFailsEveryIntervalAgainstTheSteadyStateBeforeIt) {
  BurnJudge judge(default_burn_profile(), 1);
  for (int k = 0; k < 10; ++k) {
    std::vector<Row> rows{row_of(0, k, k < 3 ? 2900 : 820)};
    const auto found = judge.judge_interval(rows);
    EXPECT_EQ(checks(found).size(), k < 3 ? 0U : 1U) << k;
  }
  EXPECT_EQ(judge.verdict_json("FAIL")["gpus"][0]["steady_state_median"]["memory.GB/s"], 2900);
}

TEST(BurnJudge, BelowGoldenIsMeasuredBadAndDataErrorsNameTheAddress) {
  BurnProfile p = default_burn_profile();
  p.golden.push_back({"memory.GB/s", 3000, 0.9});
  BurnJudge judge(p, 1);
  std::vector<Row> rows{row_of(0, 0, 2000)};
  rows[0].errors = 3;
  rows[0].checked = 100;
  rows[0].notes.emplace_back(
      "verification.errors: 3 bad word(s) in fill 2, the first at device address 0x7f00");
  const auto found = judge.judge_interval(rows);
  ASSERT_EQ(checks(found), (std::vector<std::string>{"0:data", "0:golden"}));
  EXPECT_NE(found[0].detail.find("0x7f00"), std::string::npos);
  EXPECT_NE(found[1].detail.find("measured bad"), std::string::npos);
}

TEST(BurnJudge, ARankThatWroteNoRowFailsAsMissing) {
  BurnJudge judge(default_burn_profile(), 2);
  std::vector<Row> rows{row_of(0, 0, 2900)};
  EXPECT_TRUE(judge.judge_interval(rows).empty());
  EXPECT_EQ(checks(judge.finish()), std::vector<std::string>{"1:missing"});
  EXPECT_TRUE(judge.failed());
}

TEST(BurnJudge, AnErroredRowFails) {
  BurnJudge judge(default_burn_profile(), 1);
  std::vector<Row> rows{row_of(0, 0, 2900)};
  rows[0].verdict = Verdict::error;
  rows[0].reason = "cudaErrorIllegalAddress";
  EXPECT_EQ(checks(judge.judge_interval(rows)), std::vector<std::string>{"0:error"});
}

TEST(BurnIntervalRow, GemmRatesAreTheirWorkOverTheirOwnTimeAndAnIntervalWithoutOneIsMissing) {
  IntervalInputs in;
  in.seconds = 10;
  in.work.memory_bytes = 1e12;
  in.work.h2d_bytes = 1e9;
  in.work.d2h_bytes = 1e9;
  in.work.bf16_flop = 100e12;
  in.work.bf16_seconds = 0.25;  // the canary's share of the interval: its rate is not diluted by the rest
  in.work.fp64_flop = 1e12;
  in.work.fp64_seconds = 0.05;
  in.work.bf16_hashes = {0xaa};
  in.work.fp64_hashes = {0xbb};
  const Row r = interval_row(in);
  EXPECT_DOUBLE_EQ(r.metric("gemm.bf16.TFLOP/s")->summary.median, 400);
  EXPECT_DOUBLE_EQ(r.metric("gemm.fp64.TFLOP/s")->summary.median, 20);
  EXPECT_DOUBLE_EQ(r.metric("memory.GB/s")->summary.median, 100);

  in.work.bf16_flop = 0;
  in.work.bf16_seconds = 0;
  std::vector<Row> rows{interval_row(in)};
  rows[0].device.label = "cuda:0";
  BurnJudge judge(default_burn_profile(), 1);
  const std::vector<BurnFinding> found = judge.judge_interval(rows);
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found[0].check, "missing");
  EXPECT_NE(found[0].detail.find("gemm.bf16.TFLOP/s"), std::string::npos);
}

TEST(BurnSlope, DegreesAMinute) {
  EXPECT_NEAR(slope_per_minute({{0, 50}, {60, 52}, {120, 54}}), 2, 1e-9);
  EXPECT_EQ(slope_per_minute({{0, 50}}), 0);
}

// Resident memory in kB (Linux), or 0.
long resident_kb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::stol(line.substr(6));
    }
  }
  return 0;
}

TEST(BurnSoak, ThousandsOfIntervalsKeepMemoryAndRowsFlat) {
  // The judge and the rows of an accelerated soak on the simulated device's engine: memory after 500
  // intervals and after 3000 differ by little, and each row's size does not grow.
  const auto engine = make_sim_burn_engine(1U << 16U, 1, {});
  BurnJudge judge(default_burn_profile(), 1);
  long rss_at_500 = 0;
  std::size_t first_row_notes = 0;
  for (int k = 0; k < 3000; ++k) {
    IntervalInputs in;
    in.index = k;
    in.seconds = 0.001;
    engine->step(in.work, k * 0.001);
    // The GEMMs' own time, as the wall time above, fixed: this soak is of memory and rows, and the host's
    // timing of its GEMMs (under a loaded CI) is not what it judges.
    in.work.bf16_seconds = in.seconds / 2;
    in.work.fp64_seconds = in.seconds / 2;
    std::vector<Row> rows{interval_row(in)};
    first_row_notes = k == 0 ? rows[0].notes.size() : first_row_notes;
    EXPECT_EQ(rows[0].notes.size(), first_row_notes);
    static_cast<void>(judge.judge_interval(rows));
    if (k == 500) {
      rss_at_500 = resident_kb();
    }
  }
  EXPECT_FALSE(judge.failed());
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  static_cast<void>(rss_at_500);  // the sanitizers' quarantine and shadow keep memory resident by design
#else
  EXPECT_LT(resident_kb() - rss_at_500, 8 * 1024) << "kB grown over 2500 intervals";
#endif
}

}  // namespace
}  // namespace memstress

namespace memstress {
namespace {

// A GPU's telemetry as the sampler reads it, made up: every reading a healthy one.
class SteadyTelemetry final : public Telemetry {
 public:
  [[nodiscard]] std::string unavailable() const override { return {}; }
  [[nodiscard]] TelemetrySample read() override {
    TelemetrySample s;
    s.power_w = 690;
    s.power_limit_w = 700;
    s.gpu_temp_c = 60;
    s.hbm_temp_c = 70;
    s.sm_clock_mhz = 1980;
    s.mem_clock_mhz = 2619;
    s.reasons = 0;
    s.pcie_replays = 0;
    return s;
  }
};

std::size_t open_fds() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++n;
  }
  return n;
}

TEST(BurnSoak, TheWholeLoopKeepsMemoryFilesAndRowSizesFlatOverThousandsOfIntervals) {
  // The burn's loop as `memstress burn` runs it (the session, its results stream, the sampler beside the
  // engine, the judge), accelerated: 3000 intervals of 2 ms on the simulated device. Between interval 500 and
  // the end, the resident memory and the open files stay flat, and each row written to the stream is the
  // size of the first (a row keeps its interval's samples only).
  const std::filesystem::path out = std::filesystem::path(testing::TempDir()) / "burn-soak.json";
  std::filesystem::remove(out);
  SoloWorld world;
  InterruptWatch interrupts;
  SessionOptions options;
  options.argv = {"memstress", "burn"};
  options.out = out;
  options.out_what = "--out";
  options.run.quiet = true;
  options.row_digests = false;  // as `memstress burn` runs it
  Session session(std::move(options), open_rank_device("sim:1G", "--device", "", world), world, interrupts);
  BurnProfile profile = default_burn_profile();
  profile.duration_s = 6;
  profile.interval_s = 0.002;
  profile.drift_pct =
      100;  // this host's noise at 2 ms (a step can outlast an interval) is not what is tested
  profile.lag_pct = 100;
  BurnJudge judge(profile, 1);
  BurnSetup setup;
  setup.profile = profile;
  setup.sample_s = 0.001;
  setup.make_engine = [](SessionParts&) { return make_sim_burn_engine(1U << 14U, 1, {}); };
  setup.make_telemetry = [](SessionParts&) -> std::unique_ptr<Telemetry> {
    return std::make_unique<SteadyTelemetry>();
  };
  long rss_at_500 = 0;
  long rss_at_end = 0;
  std::size_t fds_at_500 = 0;
  std::size_t fds_at_end = 0;
  int intervals = 0;
  setup.on_interval = [&](int k, int /*n*/, const std::vector<BurnFinding>& /*found*/) {
    intervals = k + 1;
    if (k == 500) {
      rss_at_500 = resident_kb();
      fds_at_500 = open_fds();
    }
    if (k == 2999) {
      rss_at_end = resident_kb();
      fds_at_end = open_fds();
    }
  };
  session.run_loop([&](SessionParts& parts) { run_burn(setup, parts, judge); });
  ASSERT_EQ(intervals, 3000);
  EXPECT_EQ(fds_at_end, fds_at_500);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  static_cast<void>(rss_at_500);
  static_cast<void>(rss_at_end);
#else
  // The judge keeps every interval of the slope's five minutes: here all of them, about 1 KiB each.
  EXPECT_LT(rss_at_end - rss_at_500, 6 * 1024) << "kB grown over 2500 intervals";
#endif
  std::ifstream stream(std::filesystem::path(out).replace_extension(".jsonl"));
  std::vector<std::size_t> sizes;
  for (std::string line; std::getline(stream, line);) {
    if (line.find(R"("workload":"burn")") != std::string::npos) {
      sizes.push_back(line.size());
    }
  }
  ASSERT_EQ(sizes.size(), 3000U);
  // Figures differ in their digits from row to row; a row that kept every sample so far would grow without
  // end.
  EXPECT_LT(*std::max_element(sizes.begin() + 500, sizes.end()), 2 * sizes[500]);
  EXPECT_FALSE(judge.failed());
}

TEST(BurnSoak, TheJudgeKeepsTheIntervalsItReadsAndTheFirstFindings) {
  // 2000 intervals of 1 s, a data error in each from interval 100: the judge keeps of the GPU the intervals
  // of the slope's five minutes and the last 30 steady ones, and the first kKeptFindings findings, and
  // counts every finding.
  BurnJudge judge(default_burn_profile(), 1);
  for (int k = 0; k < 2000; ++k) {
    std::vector<Row> rows{row_of(0, k, 3000)};
    if (k >= 100) {
      rows[0].errors = 1;
    }
    static_cast<void>(judge.judge_interval(rows));
  }
  EXPECT_LE(judge.intervals_kept(), 301U + 30U);
  EXPECT_EQ(judge.findings().size(), kKeptFindings);
  EXPECT_EQ(judge.finding_count(), 1900U);
  const nlohmann::json v = judge.verdict_json("PASS");
  EXPECT_EQ(v["gpus"][0]["intervals"], 2000);
  EXPECT_EQ(v["gpus"][0]["failures_counted"], 1900);
  EXPECT_EQ(v["gpus"][0]["failures"].size(), kKeptFindings);
  EXPECT_DOUBLE_EQ(v["gpus"][0]["steady_state_median"]["memory.GB/s"].get<double>(), 3000);
}

TEST(BurnCanaryLibrary, CublasIsLoadedAtRunTimeWithEveryEntryPoint) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP()
      << "cuBLAS keeps what it allocates as it loads (a leak to LeakSanitizer); run in the plain build";
#endif
  // No GPU needed to load it: the library the GPU's canary will use, found as memstress finds it.
  const suites::CublasLibrary cublas;
  EXPECT_NE(cublas.api().gemm_ex, nullptr);
  EXPECT_NE(cublas.api().dgemm, nullptr);
  EXPECT_EQ(cublas.version().rfind("cuBLAS ", 0), 0U) << cublas.version();
}

}  // namespace
}  // namespace memstress
