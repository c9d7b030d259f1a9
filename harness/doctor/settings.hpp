#pragma once

// For each allocator setting of the sweep: what it needs (peak reserved on a device too large to run
// out) and, for each capacity asked about, whether the program fits or where it runs out.
//
// Design note. A setting whose peak reserved is at most the capacity fits: the replay never asked the
// device for more. One whose peak is larger may still fit, since the caching allocator frees its cache
// and retries before it gives up (as PyTorch's does), so it is replayed on a device of exactly that
// capacity, stopping at its first OOM: that gives the event, the request and its site. Nothing is
// guessed from the peak alone. Replays run side by side (each its own simulated device).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/alloc/alloc_config.hpp"
#include "harness/doctor/facts.hpp"
#include "harness/doctor/live_walk.hpp"
#include "harness/memory/sim_backend.hpp"
#include "harness/replay/sweep.hpp"

namespace memstress::doctor {

// How PyTorch users write a setting: "expandable_segments:True,max_split_size_mb:64"; "" = PyTorch's
// defaults. `direct` has none (cudaMalloc per allocation: not a PyTorch setting).
[[nodiscard]] std::string pytorch_conf(const replay::SweepSetting& setting);
// A parsed PYTORCH_CUDA_ALLOC_CONF as a setting of the grid (expandable_segments:True selects the expandable
// allocator, backend:cudaMallocAsync the async one; the setting keeps the other parts).
[[nodiscard]] replay::SweepSetting setting_of(const AllocConfig& config);
// One setting: the same allocator and the same parts.
[[nodiscard]] bool same_setting(const replay::SweepSetting& a, const replay::SweepSetting& b);
// Knobs a user sets: "expandable_segments:True,max_split_size_mb:64" is two; PyTorch's defaults none.
[[nodiscard]] std::size_t knobs(const replay::SweepSetting& setting);
// The other way: a PYTORCH_CUDA_ALLOC_CONF string as a setting of the grid (expandable_segments:True
// selects the expandable allocator). Throws InputError naming `what` for a string memstress cannot parse.
[[nodiscard]] replay::SweepSetting setting_from_pytorch_conf(const std::string& conf,
                                                             const std::string& what);

// The most memory a capacity asked about may name: the settings table replays on a simulated device of twice
// the largest capacity asked about, and a simulated device holds at most SimBackend::kMaxCapacity. The one
// bound of the doctor's and predict-batch's --capacity.
inline constexpr std::uint64_t kMaxCapacity = SimBackend::kMaxCapacity / 2;

// "40G": a capacity above 0 and at most kMaxCapacity; "24G,40G,80G": one or more. Throw InputError naming
// `what` (the command's flag) for anything else.
[[nodiscard]] std::uint64_t parse_capacity(const std::string& text, std::string_view what);
[[nodiscard]] std::vector<std::uint64_t> parse_capacities(const std::string& text, std::string_view what);

// Note [The setting a program ran with]. The doctor and predict-batch judge a program under the setting it
// ran with: the one the command was given (`given`, parsed from its flag `flag`), else the one the snapshot
// recorded (its allocator_settings, `facts` of the input `name`), else PyTorch's defaults, assumed. `origin`
// says which, as both commands' outputs name it: the flag, `recorded` ("the snapshot"), or the assumption.
struct SettingInForce {
  replay::SweepSetting setting;
  std::string origin;
};
[[nodiscard]] SettingInForce setting_in_force(const std::optional<AllocConfig>& given, std::string_view flag,
                                              const SnapshotFacts& facts, const std::string& name,
                                              std::string_view recorded);

// Where a replay ran out.
struct OomAt {
  std::uint64_t event = 0;  // 1-based: the line's number among the device's lines (event_number)
  std::uint64_t seq = 0;    // the trace line's seq
  std::uint64_t time_ns = 0;
  std::uint64_t request = 0;
  std::int32_t site = -1;
};

struct CapacityVerdict {
  std::uint64_t capacity = 0;
  bool fits = true;
  // false: no verdict. A peer replayed on a GPU that ran out of memory there says nothing of a larger one.
  bool judged = true;
  bool replayed = false;  // false: the peak reserved was within the capacity
  std::optional<OomAt> oom;
};

struct SettingRow {
  replay::SweepSetting setting;
  std::int64_t peak_reserved = 0;
  std::int64_t peak_allocated = 0;
  double utilization = 1.0;
  std::int64_t retries = 0;
  std::vector<CapacityVerdict> verdicts;  // one per capacity, in the order given
};

struct SettingsAnswer {
  std::uint64_t unconstrained_capacity = 0;  // the device the peaks were measured on
  std::vector<SettingRow> rows;              // by peak reserved, then fewer settings
  std::optional<std::size_t> recommended;    // the caching or expandable row to use
  bool recommended_fits_all = false;
  std::optional<std::size_t> recorded;  // the row of the setting the program ran with
};

// Note [Other allocators in the doctor]. `doctor --allocator NAME` adds allocators that are not PyTorch
// settings (the RMM peers, plugin:PATH, async): each is replayed once, on its own, after the settings table,
// on the simulated device where it runs there (a plugin with memstress_plugin_bind), else on GPU 0 where
// there is one (the RMM peers, async, a plugin on CUDA alone), else it is skipped with the reason. A peer
// is judged against each capacity by its peak reserved alone: its own retry rules are not modelled, and a
// real GPU cannot be made smaller, so "fits" means it never held more than the capacity, and "needs more"
// that it did. A peer that ran out of memory on GPU 0 is not judged at capacities larger than that GPU's
// ("not judged"; null in JSON). Replays run one at a time: a plugin serves one allocator per device.
struct PeerRow {
  std::string allocator;
  std::string device;   // where it was replayed: "sim:1.00 TiB", "cuda:0"; "" when skipped
  std::string skipped;  // why it could not be replayed; "" when it was
  std::int64_t peak_reserved = 0;
  std::int64_t peak_allocated = 0;
  double utilization = 1.0;
  std::int64_t ooms = 0;                  // OOMs in its replay
  std::vector<CapacityVerdict> verdicts;  // by peak reserved, one per capacity (replayed: false)
};

[[nodiscard]] std::vector<PeerRow> judge_peers(const replay::ReplayTrace& trace,
                                               const std::vector<std::string>& allocators,
                                               const std::vector<std::uint64_t>& capacities,
                                               const replay::ReplayOptions& base);

// The placements of the trace's segments on `device` (an index into its devices), as the snapshot
// recorded them (SimBackend::follow_placements); empty when it did not.
using PlacementPlan = std::vector<PlannedReservation>;
[[nodiscard]] PlacementPlan recorded_placements(const replay::ReplayTrace& trace, std::uint32_t device,
                                                const SnapshotFacts& facts);

// A simulated device of `capacity` that places segments as CUDA does (what replay uses), following
// `plan` when one is given (for a replay of the setting the snapshot was recorded under).
[[nodiscard]] replay::BackendFactory sim_device(std::uint64_t capacity, const PlacementPlan* plan = nullptr);

// A device larger than any GPU's memory: what "no limit" means in a replay.
inline constexpr std::uint64_t kUnconstrained = 1ULL << 40;

// The grid: sweep_grid's 49 settings, and the recorded one if it is not among them.
[[nodiscard]] std::vector<replay::SweepSetting> doctor_grid(const replay::SweepSetting& recorded);

// The recorded setting's replays follow `plan`.
[[nodiscard]] SettingsAnswer judge_settings(const replay::ReplayTrace& trace, const LiveWalk& walk,
                                            const SnapshotFacts& facts, const PlacementPlan& plan,
                                            const std::vector<replay::SweepSetting>& grid,
                                            const replay::SweepSetting& recorded,
                                            const std::vector<std::uint64_t>& capacities,
                                            const replay::ReplayOptions& base, unsigned threads);

// The 1-based event number of a trace event (an index into trace.events) among the walk's device's lines
// (every action: allocations, frees, segments, OOMs).
[[nodiscard]] std::uint64_t event_number(const LiveWalk& walk, std::uint64_t event_index) noexcept;

// The site of the device's `nth` recorded OOM (facts.ooms lists every device's in trace order), or -1.
[[nodiscard]] std::int32_t oom_site(const SnapshotFacts& facts, const replay::ReplayTrace& trace,
                                    const LiveWalk& walk, std::size_t nth);

// Where a replay first ran out: an allocation it failed, or the recorded program's own OOM request when the
// replay probed it and it was refused too, whichever came first.
[[nodiscard]] std::optional<OomAt> first_oom(const replay::ReplayResult& result,
                                             const replay::ReplayTrace& trace, const LiveWalk& walk,
                                             const SnapshotFacts& facts);

}  // namespace memstress::doctor
