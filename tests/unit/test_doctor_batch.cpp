// memstress predict-batch on generated programs (harness/doctor/batch_match.hpp, batch_model.hpp): the
// alignment of two runs, the linear model, and the largest batch against the generator's own truth.

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "harness/core/error.hpp"
#include "harness/doctor/batch_model.hpp"

namespace memstress::doctor {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;

// Appends one line to the input's trace, and for an allocation its site and mark (-1: none) to its facts.
void add_event(DoctorInput& in, replay::Action action, std::uint64_t id, std::uint64_t bytes,
               std::int32_t site, std::int32_t mark = -1) {
  replay::Event e;
  e.seq = in.trace.events.size();
  e.time_ns = e.seq;
  e.id = id;
  e.bytes = bytes;
  e.action = action;
  in.trace.events.push_back(e);
  if (action == replay::Action::alloc) {
    in.facts.alloc_sites.push_back(site);
    if (!in.facts.marks.empty()) {
      in.facts.alloc_marks.push_back(mark);
    }
  }
}

// A training loop at batch n: 96 MiB of weights and optimizer state, then per step 6 layers of
// activations of 3 MiB per sample each, a 1 KiB loss, and (with workspace) a cuBLAS-like 8 MiB workspace
// that the run at one batch size asks for and the other does not.
DoctorInput program(std::uint64_t n, bool workspace, bool frames) {
  DoctorInput in;
  in.trace.name = "batch" + std::to_string(n);
  in.trace.devices = {"cuda:0"};
  in.facts.frames_recorded = frames;
  for (const char* where : {"model.py:10 in __init__", "model.py:42 in forward", "train.py:50 in step",
                            "blas.py:1 in workspace"}) {
    in.facts.sites.push_back(Site{where, where, 1, "f", true, {}});
  }
  std::uint64_t id = 0;
  const auto push = [&](replay::Action action, std::uint64_t ident, std::uint64_t bytes, std::int32_t site) {
    add_event(in, action, ident, bytes, frames ? site : -1);
  };
  const auto alloc = [&](std::uint64_t bytes, std::int32_t site) {
    push(replay::Action::alloc, id, bytes, site);
    return id++;
  };
  alloc(96 * kMiB, 0);
  for (int step = 0; step < 3; ++step) {
    std::vector<std::uint64_t> acts;
    acts.reserve(6);
    for (int layer = 0; layer < 6; ++layer) {
      acts.push_back(alloc(3 * kMiB * n, 1));
    }
    if (workspace) {
      push(replay::Action::free, alloc(8 * kMiB, 3), 8 * kMiB, 3);
    }
    const std::uint64_t loss = alloc(1024, 2);
    for (const std::uint64_t a : acts) {
      push(replay::Action::free, a, 3 * kMiB * n, 1);
    }
    push(replay::Action::free, loss, 1024, 2);
  }
  return in;
}

// The truth: the largest n whose own trace fits `capacity` under PyTorch's defaults.
std::uint64_t largest_fitting(std::uint64_t capacity, std::uint64_t limit) {
  std::uint64_t best = 0;
  for (std::uint64_t n = 1; n <= limit; ++n) {
    replay::ReplayOptions options;
    options.stop_at_first_oom = true;
    const DoctorInput in = program(n, false, true);
    const replay::ReplayResult r =
        replay::replay_setting(in.trace, {"caching", {}}, sim_device(capacity), options).result;
    if (!r.ooms.empty()) {
      break;
    }
    best = n;
  }
  return best;
}

TEST(PredictBatch, MatchesEveryRequestOfTheSameProgramAndModelsTheBatch) {
  const BatchModel m = build_batch_model(program(4, false, true), program(8, false, true),
                                         BatchPair(4, 8, "--batch"), "", "--trace-device");
  EXPECT_EQ(m.match.pairs.size(), m.requests_a);
  EXPECT_EQ(m.match.only_a, 0U);
  EXPECT_TRUE(m.match.by_site);
  EXPECT_DOUBLE_EQ(m.bytes_per_sample, 3.0 * 18 * kMiB);  // 6 layers x 3 steps of 3 MiB per sample
  const replay::ReplayTrace at12 = trace_at(m, 12);
  const DoctorInput truth = program(12, false, true);
  ASSERT_EQ(at12.events.size(), truth.trace.events.size());
  for (std::size_t i = 0; i < at12.events.size(); ++i) {
    EXPECT_EQ(at12.events[i].bytes, truth.trace.events[i].bytes) << i;
  }
}

TEST(PredictBatch, TheLargestBatchIsTheProgramsOwn) {
  const BatchModel m = build_batch_model(program(4, false, true), program(8, false, true),
                                         BatchPair(4, 8, "--batch"), "", "--trace-device");
  for (const std::uint64_t capacity : {512 * kMiB, 1024 * kMiB, 3000 * kMiB}) {
    const BatchAnswer a = search_batch(m, {"caching", {}}, capacity, 10000);
    ASSERT_TRUE(a.largest_fit.has_value());
    EXPECT_EQ(a.largest_fit->batch, largest_fitting(capacity, 400)) << capacity;
    // The batch named (Note [The batch that is safe]) is never above the estimate, and this program is
    // linear.
    ASSERT_TRUE(a.safe_fit.has_value());
    EXPECT_LE(a.safe_fit->batch, a.largest_fit->batch);
    EXPECT_GE(static_cast<double>(a.safe_fit->batch), 0.95 * static_cast<double>(a.largest_fit->batch));
    ASSERT_TRUE(a.first_fail.has_value());
    EXPECT_EQ(a.first_fail->batch, a.largest_fit->batch + 1);
    ASSERT_TRUE(a.first_fail->oom.has_value());
  }
}

// A replay of any batch without a program (search_batches): batches in `fails` and above `limit` run out; the
// peak reserved grows by 1 MiB a sample and the largest request is `largest`. Counts the replays of each
// batch.
struct Islands {
  std::set<std::uint64_t> fails;
  std::uint64_t limit = 0;
  std::uint64_t largest = 0;
  std::map<std::uint64_t, int> replays;

  BatchTry operator()(std::uint64_t n) {
    ++replays[n];
    BatchTry t;
    t.batch = n;
    t.fits = n <= limit && fails.count(n) == 0;
    t.peak_reserved = static_cast<std::int64_t>(n * kMiB);
    t.largest_request = largest;
    return t;
  }
};

BatchSearch search_islands(Islands& islands, std::uint64_t start, std::uint64_t capacity, bool scan) {
  return search_batches([&](std::uint64_t n) { return islands(n); }, start, 100000, capacity, scan);
}

// The answer and the first batch above it seen to run out.
void expect_answer(const BatchSearch& s, std::uint64_t largest, std::uint64_t first_fail) {
  ASSERT_TRUE(s.largest_fit.has_value());
  EXPECT_EQ(s.largest_fit->batch, largest);
  ASSERT_TRUE(s.first_fail.has_value());
  EXPECT_EQ(s.first_fail->batch, first_fail);
}

TEST(PredictBatchSearch, BatchesThatRunOutBelowTheBisectionsAnswerLowerIt) {
  // Note [Fitting is not monotonic]: bisection from 8 finds 100; the scan below it meets 97, 80, 60 and 45
  // (fewer than kScanFits fits apart), then 32 fits in a row, and names 44.
  Islands islands{{97, 80, 60, 45}, 100, 4096 * kMiB, {}};
  expect_answer(search_islands(islands, 8, 1024 * kMiB, true), 44, 45);
  for (const auto& [batch, times] : islands.replays) {
    EXPECT_EQ(times, 1) << batch;
  }
  EXPECT_EQ(islands.replays.count(45 - kScanFits), 1U);  // 44 down to 13: 32 fits below the last island
  EXPECT_EQ(islands.replays.count(44 - kScanFits), 0U);
}

TEST(PredictBatchSearch, WithoutTheScanTheAnswerIsBisections) {
  // The pessimistic model's search: no scan below the answer.
  Islands islands{{97, 80, 60, 45}, 100, 4096 * kMiB, {}};
  expect_answer(search_islands(islands, 8, 1024 * kMiB, false), 100, 101);
}

TEST(PredictBatchSearch, TheScanReachesBelowAStartThatDoesNotFit) {
  // The first batch tried (the larger recorded) runs out; the answer and an island lie below it.
  Islands islands{{64, 50}, 100, 4096 * kMiB, {}};
  expect_answer(search_islands(islands, 64, 1024 * kMiB, true), 49, 50);
}

TEST(PredictBatchSearch, AFitWithItsLargestRequestToSpareEndsTheScan) {
  // At 100 the peak (100 MiB) and the largest request (10 MiB) fit the 200 MiB with room: the scan stops at
  // its first fit, and an island far below is not looked for.
  Islands islands{{10}, 100, 10 * kMiB, {}};
  const BatchSearch s = search_islands(islands, 8, 200 * kMiB, true);
  EXPECT_EQ(s.largest_fit->batch, 100U);
  EXPECT_EQ(islands.replays.count(98), 0U);
}

TEST(PredictBatchSearch, TheScanReplaysAtMostKScanMostBatches) {
  // An island every 16 batches, all the way down from the answer (5000): never kScanFits fits in a row, so
  // the scan gives up after kScanMost replays, the answer just below the lowest island it met.
  Islands islands{{}, 5000, 8192 * kMiB, {}};
  for (std::uint64_t n = 16; n < 5000; n += 16) {
    islands.fails.insert(n);
  }
  const BatchSearch s = search_islands(islands, 4999, 8192 * kMiB, true);
  std::uint64_t below = 0;
  for (const auto& [batch, times] : islands.replays) {
    below += batch < 5000 ? 1 : 0;
  }
  EXPECT_EQ(below, kScanMost);  // 4999 (the start) and the 255 below it
  ASSERT_TRUE(s.largest_fit.has_value());
  ASSERT_TRUE(s.first_fail.has_value());
  EXPECT_EQ(s.first_fail->batch % 16, 0U);
  EXPECT_EQ(s.first_fail->batch, s.largest_fit->batch + 1);
  EXPECT_LT(s.largest_fit->batch, 5000 - kScanMost + 16);
}

TEST(PredictBatch, ARequestOfOneRunOnlyIsCountedAndTheRestStillMatch) {
  const BatchModel m = build_batch_model(program(4, true, true), program(8, false, true),
                                         BatchPair(4, 8, "--batch"), "", "--trace-device");
  EXPECT_TRUE(m.template_is_second);  // the run at the larger batch
  EXPECT_EQ(m.match.only_a, 0U);
  EXPECT_EQ(m.match.only_b, 3U);  // the workspace of each step, made at batch 4 only
  EXPECT_FALSE(m.match.by_position);
  EXPECT_DOUBLE_EQ(m.bytes_per_sample, 3.0 * 18 * kMiB);
}

TEST(PredictBatch, WithoutFramesTheSameProgramIsMatchedByOrder) {
  const BatchModel m = build_batch_model(program(4, false, false), program(8, false, false),
                                         BatchPair(4, 8, "--batch"), "", "--trace-device");
  EXPECT_FALSE(m.match.by_site);
  EXPECT_EQ(m.match.pairs.size(), m.requests_a);
  EXPECT_DOUBLE_EQ(m.bytes_per_sample, 3.0 * 18 * kMiB);
}

TEST(PredictBatch, SitesAreMatchedByWhatTheyAreNotByEachSnapshotsNumbering) {
  // The second run met its sites in another order, so its site table numbers them otherwise.
  DoctorInput b = program(8, false, true);
  std::reverse(b.facts.sites.begin(), b.facts.sites.end());
  const auto last = static_cast<std::int32_t>(b.facts.sites.size()) - 1;
  for (std::int32_t& site : b.facts.alloc_sites) {
    site = site < 0 ? site : last - site;
  }
  const BatchModel m =
      build_batch_model(program(4, false, true), b, BatchPair(4, 8, "--batch"), "", "--trace-device");
  EXPECT_EQ(m.match.pairs.size(), m.requests_a);
  EXPECT_EQ(m.match.only_a + m.match.only_b, 0U);
  EXPECT_DOUBLE_EQ(m.bytes_per_sample, 3.0 * 18 * kMiB);
}

TEST(PredictBatch, EqualOrZeroBatchesAreRefused) {
  EXPECT_THROW(BatchPair(4, 4, "--batch"), InputError);
  EXPECT_THROW(BatchPair(0, 8, "--batch"), InputError);
  for (const char* bad : {"4", "4,4", "0,8", "4,8,16", "4,x", "-4,8", "4,", ""}) {
    EXPECT_THROW((void)BatchPair::parse(bad, "--batch"), InputError) << bad;
  }
  const BatchPair pair = BatchPair::parse("8,16", "--batch");
  EXPECT_EQ(pair.first(), 8U);
  EXPECT_EQ(pair.second(), 16U);
}

// Note [A reduction's scratch stops growing]: a bias gradient's sum over 4n rows of 2048 outputs (g = 16
// groups: its 4 KiB bf16 output, 64 bytes of semaphores, 1 MiB of scratch a block) on a GPU of 132
// multiprocessors: 4n blocks a group, at most 132, and past 16 x 132 of them a sixteenth as many. `scratch`
// gives its bytes; `output` the sum's output's; `freed_first` whether the semaphores are freed before it, as
// PyTorch does.
struct Reduction {
  std::function<std::uint64_t(std::uint64_t)> scratch;
  std::uint64_t output = 4096;
  bool freed_first = true;
};

DoctorInput reduction(std::uint64_t n, const Reduction& how) {
  DoctorInput in;
  in.trace.name = "reduce" + std::to_string(n);
  in.trace.devices = {"cuda:0"};
  std::uint64_t id = 0;
  const auto push = [&](replay::Action action, std::uint64_t ident, std::uint64_t bytes) {
    replay::Event e;
    e.seq = in.trace.events.size();
    e.id = ident;
    e.bytes = bytes;
    e.action = action;
    in.trace.events.push_back(e);
  };
  push(replay::Action::alloc, id++, 96 * kMiB);
  const std::uint64_t act = id++;
  push(replay::Action::alloc, act, 3 * kMiB * n);
  push(replay::Action::alloc, id++, how.output);
  const std::uint64_t buffer = id++;
  const std::uint64_t semaphores = id++;
  push(replay::Action::alloc, buffer, how.scratch(n));
  push(replay::Action::alloc, semaphores, 64);
  if (how.freed_first) {
    push(replay::Action::free, semaphores, 64);
    push(replay::Action::free_completed, semaphores, 64);
  }
  push(replay::Action::free, buffer, how.scratch(n));
  if (!how.freed_first) {
    push(replay::Action::free, semaphores, 64);
  }
  push(replay::Action::free, act, 3 * kMiB * n);
  return in;
}

std::uint64_t pytorchs_scratch(std::uint64_t n) {
  return kMiB * std::max(std::min<std::uint64_t>(4 * n, 132), (4 * n + 15) / 16);
}

BatchModel scratch_model(std::uint64_t first, std::uint64_t second, const Reduction& how,
                         std::optional<GpuShape> gpu = GpuShape{132, 2048}) {
  return build_batch_model(reduction(first, how), reduction(second, how), BatchPair(first, second, "--batch"),
                           "", "--trace-device", gpu);
}

std::uint64_t scratch_at(const BatchModel& m, std::uint64_t n, bool pessimistic = false) {
  return trace_at(m, n, pessimistic).events[3].bytes;
}

TEST(PredictBatch, AReductionsScratchStopsGrowingAtOneWaveOfTheGpu) {
  const BatchModel m = scratch_model(4, 8, {pytorchs_scratch});
  EXPECT_EQ(m.capped, 1U);
  for (const std::uint64_t n : {8U, 16U, 33U, 34U, 64U, 528U, 529U, 1000U, 4000U}) {
    EXPECT_EQ(scratch_at(m, n), pytorchs_scratch(n)) << n;
    // The pessimistic model grows 3% faster (Note [The batch that is safe]), and is capped alike.
    const std::uint64_t pessimistic = scratch_at(m, n, true);
    EXPECT_GE(pessimistic, pytorchs_scratch(n)) << n;
    if (n >= 34 && n < 528) {
      EXPECT_EQ(pessimistic, 132 * kMiB) << n;
    }
  }
}

TEST(PredictBatch, ARunAtTheCapLeavesThePacePastTheWaveToTheOther) {
  // Recorded at 24 (96 blocks) and 48 (at the cap): the two runs' slope is too low, the run at 24's pace is
  // not.
  const BatchModel m = scratch_model(24, 48, {pytorchs_scratch});
  EXPECT_EQ(m.capped, 1U);
  for (const std::uint64_t n : {48U, 100U, 528U, 1000U, 4000U}) {
    EXPECT_GE(scratch_at(m, n), pytorchs_scratch(n)) << n;
    EXPECT_GE(scratch_at(m, n, true), pytorchs_scratch(n)) << n;
  }
  EXPECT_EQ(scratch_at(m, 100), 132 * kMiB);
}

TEST(PredictBatch, AScratchIsCappedOnlyWhereTheGpuAndThePatternSayItIsOne) {
  // Without the GPU's figures: linear, as before, never below PyTorch's.
  const BatchModel unknown = scratch_model(4, 8, {pytorchs_scratch}, std::nullopt);
  EXPECT_EQ(unknown.capped, 0U);
  EXPECT_EQ(scratch_at(unknown, 64), 256 * kMiB);
  // A size that is no multiple of the block, semaphores freed after it, or an output too large for a 4-byte
  // accumulator's scratch to be 65536 g a block (an fp64 sum's 8 x 2048 bytes: its scratch is twice that).
  const auto odd = [](std::uint64_t n) { return pytorchs_scratch(n) + 512; };
  EXPECT_EQ(scratch_model(4, 8, {odd}).capped, 0U);
  EXPECT_GT(scratch_at(scratch_model(4, 8, {odd}), 64), 256 * kMiB);
  EXPECT_EQ(scratch_model(4, 8, {pytorchs_scratch, 4096, false}).capped, 0U);
  EXPECT_EQ(scratch_model(4, 8, {pytorchs_scratch, 16384}).capped, 0U);  // 8 x 2048 bytes
  // The pattern in one run only.
  EXPECT_EQ(build_batch_model(reduction(4, {pytorchs_scratch}), reduction(8, {pytorchs_scratch, 4096, false}),
                              BatchPair(4, 8, "--batch"), "", "--trace-device", GpuShape{132, 2048})
                .capped,
            0U);
  // Fewer threads a multiprocessor than assumed: a lower cap; assuming 2048 only ever raises it.
  EXPECT_EQ(scratch_at(scratch_model(4, 8, {pytorchs_scratch}, GpuShape{132, 1024}), 64), 66 * kMiB);
}

TEST(PredictBatch, TheRecordedGpuCountsOnlyForItselfAndWithinReason) {
  const auto run = [](nlohmann::json notes) {
    DoctorInput in;
    in.facts.recorder = std::move(notes);
    return in;
  };
  const DoctorInput h100 = run(
      {{"multiprocessors", 132U}, {"threads_per_multiprocessor", 2048U}, {"device_total", 85017493504ULL}});
  const DoctorInput plain = run(nullptr);
  ASSERT_TRUE(gpu_of_runs(plain, h100, 2ULL << 30).has_value());
  EXPECT_EQ(gpu_of_runs(plain, h100, 2ULL << 30)->multiprocessors, 132U);
  EXPECT_EQ(gpu_of_runs(h100, plain, 0)->threads_per_multiprocessor, 2048U);
  EXPECT_FALSE(gpu_of_runs(plain, plain, 0).has_value());
  EXPECT_FALSE(gpu_of_runs(h100, h100, 141ULL << 30).has_value());  // more than it had: another GPU
  EXPECT_FALSE(gpu_of_runs(run({{"multiprocessors", 1U << 20U}, {"device_total", 1ULL << 40}}), plain, 0));
  EXPECT_FALSE(gpu_of_runs(run({{"multiprocessors", 132U}}), plain, 2ULL << 30));  // its memory unknown
  EXPECT_EQ(gpu_of_runs(run({{"multiprocessors", 132U}}), plain, 0)->threads_per_multiprocessor, 2048U);
  EXPECT_EQ(gpu_of_runs(h100, h100, 141ULL << 30, 114)->multiprocessors, 114U);  // given: it wins
}

// A convolutional network at batch n: 96 MiB of weights, then per step 6 layers, each a convolution's
// workspace of 4 MiB per sample and 147 bytes (asked for, freed at once: Note [A workspace PyTorch does
// without]) before its 3 MiB-per-sample activation. `marked`: the recorder marked what convolutions allocate.
DoctorInput convolutions(std::uint64_t n, bool marked) {
  DoctorInput in;
  in.trace.name = "conv" + std::to_string(n);
  in.trace.devices = {"cuda:0"};
  if (marked) {
    in.facts.marks = {std::string(kConvolutionMark)};
  }
  std::uint64_t id = 0;
  const auto push = [&](replay::Action action, std::uint64_t ident, std::uint64_t bytes, bool workspace) {
    add_event(in, action, ident, bytes, -1, workspace ? 0 : -1);
  };
  push(replay::Action::alloc, id++, 96 * kMiB, false);
  for (int step = 0; step < 3; ++step) {
    std::vector<std::uint64_t> acts;
    acts.reserve(6);
    for (int layer = 0; layer < 6; ++layer) {
      const std::uint64_t workspace = 4 * kMiB * n + 147;
      push(replay::Action::alloc, id, workspace, true);
      push(replay::Action::free, id++, workspace, true);
      acts.push_back(id);
      push(replay::Action::alloc, id++, 3 * kMiB * n, false);
    }
    for (const std::uint64_t a : acts) {
      push(replay::Action::free, a, 3 * kMiB * n, false);
    }
  }
  return in;
}

TEST(PredictBatch, AConvolutionsWorkspaceIsOneItDoesWithoutWhereTheRecorderMarkedIt) {
  constexpr std::uint64_t kCapacity = 1024 * kMiB;
  const BatchModel plain = build_batch_model(convolutions(4, false), convolutions(8, false),
                                             BatchPair(4, 8, "--batch"), "", "--trace-device");
  EXPECT_FALSE(plain.convolutions_marked);
  EXPECT_EQ(plain.freed_at_once, 18U);
  EXPECT_EQ(plain.survivable, 0U);
  const BatchModel marked = build_batch_model(convolutions(4, true), convolutions(8, true),
                                              BatchPair(4, 8, "--batch"), "", "--trace-device");
  EXPECT_TRUE(marked.convolutions_marked);
  EXPECT_EQ(marked.survivable, 18U);

  // Unmarked, every workspace is needed: the last layer's, beside five activations and the weights.
  const BatchAnswer needed = search_batch(plain, {"caching", {}}, kCapacity, 10000);
  ASSERT_TRUE(needed.largest_fit && needed.safe_fit);
  EXPECT_EQ(needed.largest_fit->refusals_survived, 0U);
  // Marked, the estimate goes on without the workspaces it is refused: further, though not as far as the
  // activations alone would fit (the workspaces granted earlier in the step leave their segments split).
  const BatchAnswer without = search_batch(marked, {"caching", {}}, kCapacity, 10000);
  ASSERT_TRUE(without.largest_fit && without.safe_fit);
  EXPECT_GT(without.largest_fit->batch, needed.largest_fit->batch);
  EXPECT_GT(without.largest_fit->refusals_survived, 0U);
  const std::uint64_t activations_fit =
      (kCapacity - 96 * kMiB) / (18 * kMiB);  // six layers of 3 MiB a sample
  EXPECT_LE(without.largest_fit->batch, activations_fit);
  // The safe end settles for each workspace's size at the smaller batch recorded (16 MiB and 147 bytes).
  EXPECT_GT(without.safe_fit->batch, needed.safe_fit->batch);
  EXPECT_LE(without.safe_fit->batch, without.largest_fit->batch);
  EXPECT_LE((96 + 18 * without.safe_fit->batch) * kMiB + 16 * kMiB + 147, kCapacity);
}
}  // namespace
}  // namespace memstress::doctor
