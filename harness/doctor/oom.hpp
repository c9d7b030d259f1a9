#pragma once

// The program's own OOM (the snapshot's first `oom` entry of the device): what it asked for, the limit it
// ran under, what the allocator held then, why it failed, and which setting would have granted it.
//
// Note [The limit in force]. An OOM is judged against the memory the process could really use, never
// against the device's free memory alone. In order: `--capacity` (its first value); else the limit the
// recorder stored (python/memstress/recorder.py: the per-process memory fraction's share, or what the
// device left PyTorch); else one inferred from the OOM itself. PyTorch calls cudaMalloc only for what
// its cache cannot serve, and raises an OOM without calling it when a memory fraction caps the process:
// a request refused while the device had far more free than the segment it needed (kCapEvidence beyond
// it) means a cap was in force. PyTorch refuses when reserved + segment > cap, after freeing its cache,
// and every reservation before it was granted, so the cap lies in [the largest reserved before the OOM,
// reserved at the OOM + the segment): the doctor judges at the lower end (a setting that grants the
// request there grants it under the real cap too) and says "a limit of about X was in force, not the
// device's Y". With no such sign, the limit is what PyTorch held plus what the device still had free.
//
// Note [Fragmentation or exhaustion]. Decided by replay at that limit, never by arithmetic alone. The
// trace is replayed under the setting the program ran with, up to the OOM line, and the request tried
// there. If that replay grants it, the OOM is not reproduced: something the snapshot does not show (a
// smaller limit, memory taken outside PyTorch's allocator, another process) made the difference, and the
// doctor says so instead of naming a cause. If it is refused too, every other setting of the grid is
// replayed the same way: fragmentation when one grants the request with no OOM before it (the memory
// existed, but not in pieces that setting could not use), exhaustion when none does (the program needs
// more than the limit; no setting helps). The setting named is the simplest that grants it (fewest knobs,
// then the most headroom left), and no setting is ever recommended whose replay did not grant it.
//
// Granting the request is not running the step: the snapshot ends at the OOM, and what the rest of the step
// asks for is not in it. On PyTorch's own runs (the proof corpus, docs/doctor.md) a setting that granted the
// request with under 6% of the limit to spare still ran out later in the step, while every OOM that a setting
// really avoided left over 25% to spare, but one: a GPT with checkpointing whose request was the step's last
// large one, with 1.7% left. So a grant with less than kEdgeHeadroom of the limit left is "at the limit": the
// doctor says it cannot tell from this snapshot, and decides only with two complete runs of the program at
// smaller batches (doctor --batch-runs), replaying the whole step at the OOM's batch under that setting.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/doctor/settings.hpp"

namespace memstress::doctor {

enum class OomCause { fragmentation, exhaustion, not_reproduced, at_the_limit };

[[nodiscard]] const char* cause_name(OomCause cause) noexcept;

enum class LimitSource { given, recorder, inferred, device };

[[nodiscard]] const char* limit_source_name(LimitSource source) noexcept;

// What the caller knows of the limit before the OOM is read: --capacity, the recorder's note.
struct LimitHint {
  std::optional<std::uint64_t> given;
  std::string given_origin;  // the command's flag that gave it ("--capacity")
  std::optional<std::uint64_t> recorded;
  std::string recorded_origin;
};

struct Limit {
  std::uint64_t bytes = 0;  // what the OOM is judged against
  LimitSource source = LimitSource::device;
  std::string origin;                            // for people
  std::optional<std::uint64_t> upper;            // inferred: the cap lies in [bytes, upper)
  std::optional<std::uint64_t> device_capacity;  // reserved + the device's free memory at the OOM
};

// A grant that leaves less than this share of the limit is "at the limit" (Note [Fragmentation or
// exhaustion]).
inline constexpr double kEdgeHeadroom = 0.10;

// A cap is inferred only where the device had at least this much free beyond the segment refused.
inline constexpr std::uint64_t kCapEvidence = 256ULL << 20;

// The segment PyTorch's caching allocator asks cudaMalloc for to serve a request of `bytes` (rounded):
// 2 MiB up to 1 MiB, 20 MiB below 10 MiB, else the request rounded up to 2 MiB.
[[nodiscard]] std::uint64_t segment_for(std::uint64_t bytes) noexcept;

struct GrantingSetting {
  replay::SweepSetting setting;
  std::int64_t reserved = 0;  // reserved while it held the request
};

struct OomAnalysis {
  std::size_t count = 0;     // oom lines of the device in the trace
  std::size_t survived = 0;  // of those, the ones the program went on after (before replay::fatal_oom)
  OomAt at;                  // the one it did not survive
  std::optional<std::uint64_t> device_free;
  std::optional<std::int64_t> recorded_reserved;
  std::optional<std::int64_t> recorded_peak_reserved;  // the largest before the OOM
  std::optional<Limit> limit;                          // none when nothing tells it
  // The replay under the program's setting, at the OOM (at the limit when known):
  std::int64_t reserved = 0;
  std::int64_t allocated = 0;
  std::optional<std::int64_t> largest_free_block;
  std::optional<bool> reproduced;  // the replay refused the request too
  bool replay_failed_earlier = false;
  std::optional<OomCause> cause;             // with a limit
  std::vector<GrantingSetting> would_grant;  // other settings that granted it with no OOM before
  std::optional<std::size_t> named;          // the one the doctor names (into would_grant)
  bool decided_by_the_step = false;          // by decide_by_the_whole_step
  // Filled by the doctor from the walk: what was live at the OOM, above the last floor before it.
  std::int64_t live = 0;
  std::optional<std::int64_t> floor;  // the live bytes kept between steps before it (growth's floors)
  std::vector<SiteShare> sites;       // live at the OOM, the largest first (at most a few)

  [[nodiscard]] std::optional<std::uint64_t> capacity() const {
    return limit ? std::optional<std::uint64_t>(limit->bytes) : std::nullopt;
  }
};

// The requests PyTorch refused a program that ran on after every one of them (Note [A recorded OOM gives back
// the cache]): a library asked for a workspace and settled for less, as cuDNN does. A program that met them
// ran at the edge of its limit: a U-Net under a 2 GiB cap on an H200 met none at batch 40, 2 at 41, 64 at 43,
// and ran out at 44.
struct SurvivedRefusals {
  std::size_t count = 0;
  std::uint64_t largest = 0;  // the largest request refused
};

// Empty when the device's oom lines include one the program did not survive, or there are none.
[[nodiscard]] std::optional<SurvivedRefusals> survived_refusals(const replay::ReplayTrace& trace,
                                                                std::uint32_t device);

// Empty when the trace has no oom line for the walk's device.
[[nodiscard]] std::optional<OomAnalysis> analyse_oom(const replay::ReplayTrace& trace, const LiveWalk& walk,
                                                     const SnapshotFacts& facts, const PlacementPlan& plan,
                                                     const std::vector<replay::SweepSetting>& grid,
                                                     const replay::SweepSetting& recorded,
                                                     const LimitHint& hint, const replay::ReplayOptions& base,
                                                     unsigned threads);

// Whether the whole step at the OOM's batch fits the limit under a setting, by the batch model of two runs
// (pessimistic: the safe end of its range, Note [The batch that is safe]).
using StepFits = std::function<bool(const replay::SweepSetting& setting, bool pessimistic)>;

// With the whole step to replay (doctor --batch-runs), a reproduced OOM is decided by it: fragmentation where
// a setting that granted the request also runs the whole step by the pessimistic model (the simplest such
// named), exhaustion where none runs it even by the estimate (or none granted the request), else at the
// limit.
void decide_by_the_whole_step(OomAnalysis& oom, const StepFits& fits);

}  // namespace memstress::doctor
