#pragma once

// The program's own OOM (the snapshot's first `oom` entry of the device): what it asked for, what the
// allocator held then, why it failed, and which settings would have granted it.
//
// Note [Fragmentation or exhaustion]. The capacity PyTorch's allocator had is what it held (reserved,
// from the trace's segment lines) plus what the device still had free (the OOM entry's device_free):
// the rest of the GPU belonged to the CUDA context and anyone else. The trace is replayed under the
// program's own setting on a simulated device of that capacity, up to the OOM line, and the request
// is tried there (replay reproduces the OOM when it is refused too). If the live allocations and the
// request together exceed the capacity, no setting can help: the program needs more memory than it
// had (exhaustion). Otherwise the memory existed but not in one piece: the free bytes were scattered
// through partly used segments (fragmentation), and the same replay under each setting of the grid
// says which would have granted the request with no OOM before it. Replayed, not guessed.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/doctor/settings.hpp"

namespace memstress::doctor {

enum class OomCause { fragmentation, exhaustion };

struct OomAnalysis {
  std::size_t count = 0;  // oom lines of the device in the trace
  OomAt at;               // the first
  std::optional<std::uint64_t> device_free;
  std::optional<std::int64_t> recorded_reserved;
  std::optional<std::uint64_t> capacity;  // what the allocator could have had (none when unknown)
  // The replay under the program's setting, at the OOM (on the capacity when known):
  std::int64_t reserved = 0;
  std::int64_t allocated = 0;
  std::optional<std::int64_t> largest_free_block;
  std::optional<bool> reproduced;  // the replay refused the request too
  bool replay_failed_earlier = false;
  std::optional<OomCause> cause;                  // with a capacity
  std::vector<replay::SweepSetting> would_grant;  // settings that granted it with no OOM before
};

// Empty when the trace has no oom line for the walk's device.
[[nodiscard]] std::optional<OomAnalysis> analyse_oom(const replay::ReplayTrace& trace, const LiveWalk& walk,
                                                     const SnapshotFacts& facts, const PlacementPlan& plan,
                                                     const std::vector<replay::SweepSetting>& grid,
                                                     const replay::SweepSetting& recorded,
                                                     std::optional<std::uint64_t> capacity_given,
                                                     const replay::ReplayOptions& base, unsigned threads);

}  // namespace memstress::doctor
