#pragma once

// `memstress doctor SNAPSHOT`: the answers a PyTorch user with an OOM (or a growing footprint) needs,
// from one snapshot, each replayed rather than guessed: what the program needed and when, who held the
// memory at the peak, why its OOM happened and which setting avoids it, how every allocator setting
// fares at each capacity, and whether memory grows step after step.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/doctor/batch_model.hpp"
#include "harness/doctor/flags.hpp"
#include "harness/doctor/growth.hpp"
#include "harness/doctor/input.hpp"
#include "harness/doctor/oom.hpp"
#include "harness/doctor/settings.hpp"

namespace memstress::doctor {

// Two complete runs of the same program at two batch sizes (`doctor --batch-runs A,B --batch a,b`): for an
// exhaustion, the largest batch that fits the limit, as predict-batch finds it.
struct BatchRuns {
  const DoctorInput* first = nullptr;
  const DoctorInput* second = nullptr;
  BatchPair batches;
  std::uint64_t multiprocessors =
      0;  // the GPU's (predict-batch --multiprocessors); 0: the runs' recorded figures
};

// What the batch runs say at the limit: the safe end of the range and the estimate (0: none fits); and, at
// the OOM's batch, the peak of the step's live bytes and what of it grows with the batch (the activations and
// workspaces: the peak less the peak at batch 1), Note [What grows with the batch]. An inferred limit is a
// range (Note [The limit in force]): `top` is what they say at its top, the most the cap can have been.
struct BatchAdvice {
  struct AtLimit {
    std::uint64_t limit = 0;
    std::uint64_t safe = 0;
    std::uint64_t estimate = 0;
  };
  std::uint64_t safe = 0;
  std::uint64_t estimate = 0;
  std::optional<AtLimit> top;
  std::uint64_t batch = 0;  // the OOM's (the recorder's); 0: not known, nor the two below
  std::int64_t peak_live = 0;
  std::int64_t grows_with_batch = 0;
};

struct DoctorOptions {
  std::vector<std::uint64_t> capacities;  // empty: the recorded GPU's, when the snapshot says
  // The setting the program ran with, given (Note [The setting a program ran with], settings.hpp).
  std::optional<AllocConfig> alloc_conf;
  std::string trace_device;  // "cuda:1"; empty: the trace's first device
  DoctorFlags flags{};       // the command's flags that gave the above, named in the outputs and the advice
  std::size_t top_sites = 10;
  unsigned threads =
      0;  // replays side by side, at most (0: one per hardware thread; Note [Replays side by side])
  std::vector<std::string> peers;  // --allocator: other allocators, each replayed once (judge_peers)
  std::optional<BatchRuns> batch_runs;
};

struct Needed {
  std::string on;                   // the device it was replayed on: "on the 806.40 MiB it had", …
  std::int64_t peak_allocated = 0;  // allocated_bytes.all.peak of the replay under the program's setting
  std::int64_t peak_reserved = 0;
  std::int64_t peak_requested = 0;
  std::optional<std::int64_t> recorded_peak_reserved;  // from the trace's segment lines
  std::int64_t reserved_minus_allocated = 0;           // at the peak
  double utilization = 1.0;                            // peak allocated / peak reserved
  std::optional<double> external_fragmentation;        // at the peak
  std::uint64_t peak_event = 0;                        // 1-based, the program's live bytes' peak
  std::uint64_t peak_time_ns = 0;                      // since the device's first event
  std::uint64_t start_ns = 0;                          // the device's first event's time in the trace
  std::uint64_t events = 0;
  std::uint64_t duration_ns = 0;
};

struct GrowthAnswer {
  StepsVerdict steps = StepsVerdict::no_repeat;  // Note [Steps are what repeats] (growth.hpp)
  std::size_t step_requests = 0;                 // allocs and frees a step takes (0: no_repeat)
  double kept_per_step = 0;                      // medians, steps and keeps_most: what a step keeps
  double rise_per_step = 0;                      // and its rise above the floor it began on
  std::size_t requests = 0;                      // the allocs and frees searched
  bool ends_at_oom = false;  // the recording ends in an OOM the program died of, on any device (fatal_oom)
  bool ends_in_the_loop = false;  // steps, ends_at_oom: the recording ends within a step of the loop's end
  // steps: the floors rise within runs of steps but fall back between runs, so that all of them rise less
  // than half what a step keeps (the layers of passes that end): no growth (Note [Steps are what repeats]).
  bool falls_back = false;
  std::vector<Floor> floors;  // between each two steps, where they are steps
  std::vector<std::uint64_t> floor_times_ns;
  LineFit fit;
  double bytes_per_second = 0;  // the slope per step over the mean step time
  std::vector<SiteGrowth> sites;

  // Steps, or repeats that keep much but give back most of their rise in a recording that does not end in an
  // OOM (Note [Steps are what repeats]): the floors are fitted.
  [[nodiscard]] bool judged() const noexcept {
    return steps == StepsVerdict::steps || (steps == StepsVerdict::keeps_much && !ends_at_oom &&
                                            kept_per_step <= kStepsKeepAtMost * rise_per_step);
  }
  [[nodiscard]] bool grows() const noexcept { return judged() && fit.growing() && !falls_back; }
};

// NOLINTNEXTLINE(bugprone-exception-escape): nlohmann::json's implicit move checks its invariant, an assert
struct DoctorReport {
  DoctorFlags flags{};  // DoctorOptions::flags, for the advice
  std::string input;
  std::string source;
  std::string trace_device;
  std::vector<std::string> other_devices;
  bool frames_recorded = false;
  replay::SweepSetting setting;           // the one the program ran with
  std::string setting_origin;             // SettingInForce::origin
  std::vector<std::uint64_t> capacities;  // judged in the settings table
  std::string capacity_origin;
  std::optional<std::uint64_t> own_capacity;    // the limit in force (Note [The limit in force]), when known
  std::optional<std::uint64_t> recorded_batch;  // the recorder's batch size
  std::optional<BatchAdvice> batch_advice;      // with --batch-runs, for an exhaustion
  Needed needed;
  std::vector<SiteShare> sites_at_peak;  // the largest top_sites, then one row for the rest (site -2)
  std::int64_t live_at_peak = 0;
  std::optional<OomAnalysis> oom;
  std::optional<SurvivedRefusals> refusals;  // without an OOM it died of: the refusals it went on after
  SettingsAnswer settings;
  std::vector<PeerRow> peers;  // --allocator
  GrowthAnswer growth;
  std::vector<replay::TimelinePoint> timeline;  // under the program's setting
  std::vector<Site> sites;                      // the facts' sites, for names
  nlohmann::json recorder;

  // "models/llama.py:412 in forward", "(no stack frames recorded)", "(everything else)".
  [[nodiscard]] std::string site_name(std::int32_t site) const;
};

inline constexpr std::int32_t kOtherSites = -3;  // the rows of sites_at_peak past top_sites, together

// Note [Replays side by side]. The doctor replays the trace some fifty times, side by side, and each replay
// holds an allocator's state: about 2 KiB for each of the trace's streams (the caching allocator's pools, the
// simulated device's and the replay's bookkeeping: 1.6 KiB measured, 2.1 with expandable segments) and 160
// bytes for each allocation live at once (a block and its entries in the allocator's and the replay's maps:
// 140 measured). A replay a core made a doctor of a trace of 200,000 streams hold 1.26 GB on 2 cores, and
// would have made it hold some 7 GB on 16, against docs/limits.md's bound of twice the trace plus 512 MiB.
// So only as many replays run side by side as kReplayBudget holds, at least one: those 200,000 streams one at
// a time (400 MB), 1,000,000 blocks live at once two at a time, most traces one a core as before. The
// answers do not depend on it.
inline constexpr std::uint64_t kReplayStreamBytes = 2048;
inline constexpr std::uint64_t kReplayBlockBytes = 160;
inline constexpr std::uint64_t kReplayBudget = 320ULL << 20;
// How many replays of the walk's trace run side by side: at most `threads` (0: one per hardware thread).
[[nodiscard]] unsigned replays_side_by_side(const LiveWalk& walk, unsigned threads) noexcept;

[[nodiscard]] DoctorReport diagnose(const DoctorInput& input, const DoctorOptions& options);

}  // namespace memstress::doctor
