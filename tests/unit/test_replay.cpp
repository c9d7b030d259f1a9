// memstress replay on small synthetic traces (harness/replay): reading (plain, gzip, bad input), stream
// semantics of pending frees, OOM points, unpaired frees, several devices, the timeline and the sweep.

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "harness/alloc/factory.hpp"
#include "harness/core/error.hpp"
#include "harness/memory/sim_backend.hpp"
#include "harness/replay/replay_trace.hpp"
#include "harness/replay/replayer.hpp"
#include "harness/replay/sweep.hpp"
#include "tests/unit/temp_dir.hpp"

namespace memstress::replay {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;

// A trace from "action,id,bytes,stream[,device]" lines; seq and time are filled in.
std::string trace_text(const std::vector<std::string>& lines) {
  std::string text = "# memstress-trace v1\nseq,time_ns,action,id,bytes,stream,device\n";
  std::uint64_t seq = 0;
  for (const std::string& line : lines) {
    const std::size_t commas = static_cast<std::size_t>(std::count(line.begin(), line.end(), ','));
    text += std::to_string(seq) + "," + std::to_string(seq * 1000) + "," + line +
            (commas == 3 ? ",cuda:0" : "") + "\n";
    ++seq;
  }
  return text;
}

ReplayResult replay_on_sim(const std::string& text, std::string_view allocator,
                           std::uint64_t capacity = 80ULL << 30, const ReplayOptions& options = {}) {
  const ReplayTrace trace = parse_replay_trace(text, "t.csv");
  SimBackend sim(capacity);
  const std::unique_ptr<Allocator> a = make_allocator(allocator, sim);
  return replay_trace(trace, *a, options);
}

std::string mib(std::uint64_t n) {
  return std::to_string(n * kMiB);
}

TEST(ReplayTrace, ReadsEveryActionAndCountsUnknownOnes) {
  const ReplayTrace t =
      parse_replay_trace(trace_text({"segment_alloc,0," + mib(20) + ",0", "alloc,0,100,0", "free,0,100,0",
                                     "free_completed,0,100,0", "oom,,512,0", "segment_map,,2097152,0",
                                     "annotate,,0,0", "alloc,1,100,7,cuda:1"}),
                         "t.csv");
  ASSERT_EQ(t.events.size(), 7U);
  EXPECT_EQ(t.events[0].action, Action::segment_alloc);
  EXPECT_EQ(t.events[3].action, Action::free_completed);
  EXPECT_EQ(t.events[4].action, Action::oom);
  EXPECT_EQ(t.skipped_actions.at("annotate"), 1U);
  EXPECT_EQ(t.devices, (std::vector<std::string>{"cuda:0", "cuda:1"}));
  EXPECT_EQ(t.events[6].device, 1U);
}

TEST(ReplayTrace, RejectsWhatIsNotATrace) {
  EXPECT_THROW(static_cast<void>(parse_replay_trace("hello\n", "t.csv")), InputError);
  EXPECT_THROW(static_cast<void>(parse_replay_trace(trace_text({"alloc,x,100,0"}), "t.csv")), InputError);
  EXPECT_THROW(static_cast<void>(
                   parse_replay_trace(trace_text({"alloc,0,100,0"}) + "1,2,free,0,100,0,cuda:0", "t.csv")),
               InputError);  // the last line was cut short
}

TEST(ReplayTrace, ADeviceLabelWithAControlCharacterIsRefused) {
  // With a column after `device`, a '\r' was kept in the label and lost when the trace was formatted again
  // (fuzz/regressions/replay_trace/device-label-cr.trace.csv).
  const std::string text =
      "# memstress-trace v1\nseq,time_ns,action,id,bytes,stream,device,x\n1,0,alloc,1,8,0,dev\r,y\n";
  try {
    static_cast<void>(parse_replay_trace(text, "t.csv"));
    ADD_FAILURE() << "accepted a device label with a carriage return";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "t.csv:3: column 'device': 'dev\r' holds a control character");
  }
  const ReplayTrace crlf = parse_replay_trace(
      "# memstress-trace v1\r\nseq,time_ns,action,id,bytes,stream,device\r\n1,0,alloc,1,8,0,cuda:0\r\n",
      "t.csv");
  EXPECT_EQ(crlf.devices, (std::vector<std::string>{"cuda:0"}));  // a line's own \r\n is not the label's
}

TEST(ReplayTrace, ReadsGzipAndNamesATruncatedOne) {
  const testing::TempDir dir;
  const std::string text = trace_text({"alloc,0,100,0", "free,0,100,0"});
  const auto gz = dir.file("t.csv.gz");
  {
    gzFile f = gzopen(gz.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
    ASSERT_EQ(gzclose(f), Z_OK);
  }
  EXPECT_EQ(read_replay_trace(gz).events.size(), 2U);
  const auto size = std::filesystem::file_size(gz);
  std::filesystem::resize_file(gz, size - 10);
  try {
    static_cast<void>(read_replay_trace(gz));
    FAIL() << "a truncated gzip file was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("t.csv.gz"), std::string::npos) << e.what();
  }
  EXPECT_THROW(static_cast<void>(read_replay_trace(dir.file("nosuch.csv"))), InputError);
}

// A block freed on stream 1 whose free_completed comes after the next allocation on stream 1 must not be
// reused by it: a second segment. Completed first, it is reused.
TEST(Replay, PendingFreeIsNotReusedBeforeFreeCompleted) {
  const std::string late = trace_text({"alloc,0," + mib(12) + ",1", "free,0," + mib(12) + ",1",
                                       "alloc,1," + mib(12) + ",1", "free_completed,0," + mib(12) + ",1"});
  const std::string early = trace_text({"alloc,0," + mib(12) + ",1", "free,0," + mib(12) + ",1",
                                        "free_completed,0," + mib(12) + ",1", "alloc,1," + mib(12) + ",1"});
  for (const std::string_view allocator : {"caching", "direct"}) {
    SCOPED_TRACE(allocator);
    const ReplayResult l = replay_on_sim(late, allocator);
    EXPECT_EQ(l.peak_reserved, static_cast<std::int64_t>(24 * kMiB));
    EXPECT_EQ(l.counts.frees_pending, 1U);
    const ReplayResult e = replay_on_sim(early, allocator);
    EXPECT_EQ(e.peak_reserved, static_cast<std::int64_t>(12 * kMiB));
    EXPECT_EQ(e.counts.frees_pending, 0U);
  }
  // The caching allocator holds the block with record_stream: allocated drops at the free (PyTorch's
  // allocated_bytes), active at the completion.
  const ReplayResult c = replay_on_sim(late, "caching");
  EXPECT_EQ(c.pending_frees, PendingFrees::record_stream);
  EXPECT_EQ(c.peak_allocated, static_cast<std::int64_t>(12 * kMiB));
  EXPECT_EQ(c.peak_active, static_cast<std::int64_t>(24 * kMiB));
  EXPECT_EQ(replay_on_sim(late, "direct").pending_frees, PendingFrees::deferred);
}

// A trace without free_completed lines (v1: --alloc-trace, RMM) frees at once; in one with them, a free
// that never completes keeps its block to the end.
TEST(Replay, FreeWithoutCompletionIsImmediateOnlyInV1Traces) {
  const std::vector<std::string> v1{"alloc,0," + mib(12) + ",1", "free,0," + mib(12) + ",1",
                                    "alloc,1," + mib(12) + ",1", "free,1," + mib(12) + ",1"};
  EXPECT_EQ(replay_on_sim(trace_text(v1), "caching").peak_reserved, static_cast<std::int64_t>(12 * kMiB));
  std::vector<std::string> converted = v1;
  converted.emplace_back("free_completed,1," + mib(12) + ",1");
  const ReplayResult r = replay_on_sim(trace_text(converted), "caching");
  EXPECT_EQ(r.peak_reserved, static_cast<std::int64_t>(24 * kMiB));
  EXPECT_EQ(r.counts.live_at_end, 1U);
}

// Another stream never gets the block while it is pending (nor after: blocks stay on their stream).
TEST(Replay, PendingFreeIsNotReusedByAnotherStream) {
  const ReplayResult r = replay_on_sim(
      trace_text({"alloc,0," + mib(12) + ",1", "free,0," + mib(12) + ",1", "alloc,1," + mib(12) + ",2",
                  "free_completed,0," + mib(12) + ",1", "free,1," + mib(12) + ",2"}),
      "caching");
  EXPECT_EQ(r.peak_reserved, static_cast<std::int64_t>(24 * kMiB));
  EXPECT_EQ(r.counts.frees, 2U);
}

TEST(Replay, OomIsRecordedAndReplayGoesOn) {
  const ReplayResult r =
      replay_on_sim(trace_text({"alloc,0," + mib(40) + ",0", "alloc,1," + mib(40) + ",0",
                                "free,1," + mib(40) + ",0", "free_completed,1," + mib(40) + ",0",
                                "free,0," + mib(40) + ",0", "alloc,2," + mib(40) + ",0"}),
                    "caching", 64 * kMiB);
  EXPECT_EQ(r.num_ooms, 1);
  ASSERT_EQ(r.ooms.size(), 1U);
  const OomPoint& p = r.ooms.front();
  EXPECT_EQ(p.event_index, 1U);
  EXPECT_EQ(p.request_bytes, 40 * kMiB);
  EXPECT_EQ(p.allocated, static_cast<std::int64_t>(40 * kMiB));
  EXPECT_EQ(p.reserved, static_cast<std::int64_t>(40 * kMiB));
  ASSERT_TRUE(p.largest_free_block.has_value());
  EXPECT_EQ(*p.largest_free_block, 0);
  EXPECT_EQ(r.counts.frees_of_failed, 1U);
  EXPECT_EQ(r.counts.frees, 1U);
  EXPECT_EQ(r.counts.allocs, 3U);  // the last one reuses the first block
  EXPECT_EQ(r.peak_reserved, static_cast<std::int64_t>(40 * kMiB));
}

TEST(Replay, FreesOfUnknownIdsAreSkippedAndCounted) {
  const ReplayResult r = replay_on_sim(trace_text({"free,7,4096,0", "free_completed,7,4096,0",
                                                   "alloc,0,4096,0", "free,0,4096,0", "free,0,4096,0"}),
                                       "caching");
  EXPECT_EQ(r.counts.unknown_frees, 2U);  // id 7 (allocated before the trace) and id 0's second free
  EXPECT_EQ(r.counts.frees, 1U);
}

TEST(Replay, ReplaysOneDeviceOfSeveral) {
  const std::string text = trace_text({"alloc,0," + mib(4) + ",0", "alloc,1," + mib(30) + ",0,cuda:1",
                                       "free,0," + mib(4) + ",0", "free,1," + mib(30) + ",0,cuda:1"});
  const ReplayResult first = replay_on_sim(text, "caching");
  EXPECT_EQ(first.trace_device, "cuda:0");
  EXPECT_EQ(first.other_devices, std::vector<std::string>{"cuda:1"});
  EXPECT_EQ(first.counts.other_device_events, 2U);
  EXPECT_EQ(first.peak_allocated, static_cast<std::int64_t>(4 * kMiB));
  ReplayOptions options;
  options.device = "cuda:1";
  EXPECT_EQ(replay_on_sim(text, "caching", 80ULL << 30, options).peak_allocated,
            static_cast<std::int64_t>(30 * kMiB));
  options.device = "cuda:5";
  options.device_what = "the trace's device";  // named as the caller names it
  try {
    static_cast<void>(replay_on_sim(text, "caching", 80ULL << 30, options));
    ADD_FAILURE() << "replayed a device the trace does not have";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("the trace's device 'cuda:5': the trace '", 0), 0U) << e.what();
  }
}

TEST(Replay, TimelineIsDownsampledAndKeepsThePeak) {
  std::vector<std::string> lines;
  for (int i = 0; i < 500; ++i) {
    const std::string bytes = mib(i == 250 ? 100 : 2);
    lines.push_back("alloc," + std::to_string(i) + "," + bytes + ",0");
    lines.push_back("free," + std::to_string(i) + "," + bytes + ",0");
  }
  ReplayOptions options;
  options.timeline_points = 64;
  const ReplayResult r = replay_on_sim(trace_text(lines), "caching", 80ULL << 30, options);
  EXPECT_LE(r.timeline.size(), 64U);
  EXPECT_GE(r.timeline.size(), 60U);
  std::int64_t top = 0;
  for (const TimelinePoint& p : r.timeline) {
    top = std::max(top, p.allocated);
  }
  EXPECT_EQ(top, static_cast<std::int64_t>(100 * kMiB));
  EXPECT_EQ(r.peak_allocated, top);
  EXPECT_EQ(r.timeline.back().event_index, 999U);
}

TEST(Replay, SweepRanksTheGridByPeakReserved) {
  const ReplayTrace trace =
      parse_replay_trace(trace_text({"alloc,0," + mib(30) + ",0", "alloc,1," + mib(3) + ",0",
                                     "free,0," + mib(30) + ",0", "alloc,2," + mib(33) + ",0"}),
                         "t.csv");
  const std::vector<SweepSetting> grid = sweep_grid();
  EXPECT_EQ(grid.size(), 49U);
  const Sweep sweep = run_sweep(trace, grid, [] { return std::make_unique<SimBackend>(1ULL << 30); }, {});
  ASSERT_EQ(sweep.rows.size(), grid.size());
  for (std::size_t i = 1; i < sweep.rows.size(); ++i) {
    EXPECT_LE(sweep.rows[i - 1].result.peak_reserved, sweep.rows[i].result.peak_reserved);
  }
  ASSERT_TRUE(sweep.best_by_peak_reserved.has_value());
  ASSERT_TRUE(sweep.best_by_oom_margin.has_value());
  EXPECT_EQ(*sweep.best_by_oom_margin, 0U);
}

TEST(ReplayForTheDoctor, CapturesTheStateAtAnEventAndStopsWhereAsked) {
  const std::string text = trace_text({"alloc,0," + mib(8) + ",0", "alloc,1," + mib(8) + ",0",
                                       "free,0," + mib(8) + ",0", "alloc,2," + mib(8) + ",0"});
  ReplayOptions options;
  options.capture_at_event = 1;
  options.stop_after_event = 2;
  const ReplayResult r = replay_on_sim(text, "caching", 80ULL << 30, options);
  ASSERT_TRUE(r.captured.has_value());
  EXPECT_EQ(r.captured->at("allocated_bytes.all.current"), static_cast<std::int64_t>(16 * kMiB));
  EXPECT_TRUE(r.stopped_early);
  EXPECT_EQ(r.counts.allocs, 2U);  // the third alloc was never replayed
}

TEST(ReplayForTheDoctor, ARecordedOomIsProbedAndStopAtFirstOomEndsTheReplay) {
  // The OOM the program died of: no allocation after it, only the frees of its unwinding.
  const std::string text =
      trace_text({"alloc,0," + mib(60) + ",0", "oom,,67108864,0", "free,0," + mib(60) + ",0"});
  ReplayOptions probe;
  probe.probe_recorded_ooms = true;
  const ReplayResult roomy = replay_on_sim(text, "caching", 1ULL << 30, probe);
  ASSERT_EQ(roomy.recorded_ooms.size(), 1U);
  EXPECT_EQ(roomy.recorded_ooms[0].probe_granted, true);
  EXPECT_EQ(roomy.num_ooms, 0);
  probe.stop_at_first_oom = true;
  const ReplayResult tight = replay_on_sim(text, "caching", 100 * kMiB, probe);
  ASSERT_EQ(tight.recorded_ooms.size(), 1U);
  EXPECT_EQ(tight.recorded_ooms[0].probe_granted, false);
  EXPECT_EQ(tight.num_ooms, 0);  // a refused probe is not an OOM of the trace's allocations
  EXPECT_TRUE(tight.stopped_early);
  EXPECT_EQ(tight.counts.frees, 0U);
  EXPECT_EQ(fatal_oom(parse_replay_trace(text, "t.csv"), 0), std::optional<std::size_t>{1});
}

TEST(ReplayForTheDoctor, AnOomTheProgramWentOnAfterIsNotProbed) {
  // An allocation after the oom line: the program survived the refusal (replay::fatal_oom); it is not
  // the program's OOM, so no setting is judged by it, and the cache is emptied there instead.
  const std::string text =
      trace_text({"alloc,0," + mib(60) + ",0", "oom,,67108864,0", "alloc,1," + mib(30) + ",0"});
  ReplayOptions probe;
  probe.probe_recorded_ooms = true;
  probe.stop_at_first_oom = true;
  const ReplayResult r = replay_on_sim(text, "caching", 100 * kMiB, probe);
  ASSERT_EQ(r.recorded_ooms.size(), 1U);
  EXPECT_TRUE(r.recorded_ooms[0].survived);
  EXPECT_FALSE(r.recorded_ooms[0].probe_granted.has_value());
  EXPECT_FALSE(r.stopped_early);
  EXPECT_EQ(r.counts.allocs, 2U);
  EXPECT_EQ(fatal_oom(parse_replay_trace(text, "t.csv"), 0), std::nullopt);
}

TEST(ReplayForTheDoctor, ARefusalOfAWorkspaceTheProgramDoesWithoutIsNoOom) {
  // 60 MiB live under a 100 MiB cap; the program asks for a 50 MiB workspace (line 1) that it can do without
  // (Note [A workspace PyTorch does without]), then 30 MiB.
  const std::string text = trace_text({"alloc,0," + mib(60) + ",0", "alloc,1," + mib(50) + ",0",
                                       "free,1," + mib(50) + ",0", "alloc,2," + mib(30) + ",0"});
  ReplayOptions options;
  options.stop_at_first_oom = true;
  const ReplayResult plain = replay_on_sim(text, "caching", 100 * kMiB, options);
  ASSERT_EQ(plain.ooms.size(), 1U);
  EXPECT_EQ(plain.ooms[0].event_index, 1U);
  EXPECT_TRUE(plain.stopped_early);

  options.survivable = {{1, 0}};  // it does without
  const ReplayResult without = replay_on_sim(text, "caching", 100 * kMiB, options);
  EXPECT_TRUE(without.ooms.empty());
  EXPECT_EQ(without.counts.refusals_survived, 1U);
  EXPECT_EQ(without.counts.frees_of_failed, 1U);
  EXPECT_EQ(without.counts.allocs, 3U);
  EXPECT_EQ(without.peak_allocated, static_cast<std::int64_t>(90 * kMiB));

  options.survivable = {{1, 20 * kMiB}};  // it settles for 20 MiB, which fits beside the 60
  const ReplayResult smaller = replay_on_sim(text, "caching", 100 * kMiB, options);
  EXPECT_TRUE(smaller.ooms.empty());
  EXPECT_EQ(smaller.counts.refusals_survived, 1U);
  EXPECT_EQ(smaller.counts.frees, 1U);  // the smaller workspace is freed as the line says
  EXPECT_EQ(smaller.peak_allocated, static_cast<std::int64_t>(90 * kMiB));

  options.survivable = {{1, 45 * kMiB}};  // it settles for 45 MiB, refused too: that is the OOM
  const ReplayResult refused = replay_on_sim(text, "caching", 100 * kMiB, options);
  ASSERT_EQ(refused.ooms.size(), 1U);
  EXPECT_EQ(refused.ooms[0].event_index, 1U);
  EXPECT_EQ(refused.ooms[0].request_bytes, 45 * kMiB);
  EXPECT_EQ(refused.counts.refusals_survived, 0U);

  options.survivable = {{1, 80 * kMiB}};  // it settles for no less than it asked: asked again, refused again
  const ReplayResult again = replay_on_sim(text, "caching", 100 * kMiB, options);
  ASSERT_EQ(again.ooms.size(), 1U);
  EXPECT_EQ(again.ooms[0].request_bytes, 50 * kMiB);
  EXPECT_EQ(again.counts.refusals_survived, 0U);
}

TEST(Replay, ARecordedOomGivesBackTheCacheAsPyTorchsDid) {
  // PyTorch refused 200 MiB under a 100 MiB cap, giving back its cached 40 MiB segment on the way; the
  // program went on. Replayed with that cache still there, the 2 MiB request splits the 40 MiB segment and
  // the 70 MiB one finds no room (40 + 70 > 100); with the cache given back at the OOM line, the 2 MiB lands
  // in a 20 MiB segment of its own and the 70 MiB fits (Note [A recorded OOM gives back the cache]).
  const std::string text =
      trace_text({"alloc,0," + mib(40) + ",0", "free,0," + mib(40) + ",0", "oom,," + mib(200) + ",0",
                  "alloc,1," + mib(2) + ",0", "alloc,2," + mib(70) + ",0"});
  const ReplayResult released = replay_on_sim(text, "caching", 100 * kMiB);
  EXPECT_EQ(released.num_ooms, 0);
  EXPECT_EQ(released.counts.trace_ooms, 1U);
  EXPECT_EQ(released.peak_reserved, static_cast<std::int64_t>(90 * kMiB));
  // On a device far larger than the program had, the refused request is not made: the peaks are the
  // program's.
  const ReplayResult roomy = replay_on_sim(text, "caching");
  EXPECT_EQ(roomy.peak_reserved, static_cast<std::int64_t>(90 * kMiB));
  EXPECT_EQ(roomy.peak_allocated, static_cast<std::int64_t>(72 * kMiB));
  ReplayOptions kept;
  kept.release_at_recorded_ooms = false;
  const ReplayResult counted = replay_on_sim(text, "caching", 100 * kMiB, kept);
  EXPECT_EQ(counted.num_ooms, 1);
  ASSERT_EQ(counted.ooms.size(), 1U);
  EXPECT_EQ(counted.ooms[0].request_bytes, 70 * kMiB);
}

}  // namespace
}  // namespace memstress::replay
