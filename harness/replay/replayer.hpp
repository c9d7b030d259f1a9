#pragma once

// Replaying a trace through an allocator: every alloc and free of one of the trace's devices, in order,
// with the figures PyTorch reports (peaks of allocated and reserved bytes, retries, OOMs), the three
// fragmentation figures, a timeline of reserved vs allocated, and the point of each OOM.
//
// Note [Pending frees]. PyTorch's free of a block used on other streams (record_stream) is two steps:
// free_requested, when the program lets go (allocated_bytes drops), and free_completed, when the other
// streams' work has finished and the block goes back to the pool (active_bytes drops; it may be reused
// from then on). Two ways to keep the block from being reused in between:
//   record_stream — the replayer records a synthetic stream on the block, holds that stream on the
//     simulated device (SimBackend::hold_stream), frees the block at its `free` line and releases the
//     stream at its `free_completed` line. The caching allocator then does exactly what PyTorch did: the
//     block's event completes at free_completed, it is returned at the next allocation on its stream,
//     allocated_bytes drops at the free and active_bytes at the completion, and an OOM retry synchronizes
//     pending events first, as PyTorch's does. Reserved and allocated peaks both match PyTorch's.
//   deferred — the replayer frees the block at its `free_completed` line. Exact for reserved bytes (the
//     block becomes reusable at the same moment), but allocated_bytes then drops late, so its peak is
//     PyTorch's active_bytes peak; and any allocator works, whether or not it honours record_stream.
// Replay uses record_stream where it is exact — the simulated device and a caching allocator (caching,
// expandable) — and deferred elsewhere (a real GPU, where no stream can be held open from the host
// cheaply; direct and async, which ignore record_stream). Measured on the committed PyTorch traces,
// both give the same reserved peak; record_stream also gives PyTorch's allocated peak (multistream_loader:
// 975 MB allocated, 1.51 GB active). A free whose free_completed comes before any further allocation of
// that device (PyTorch writes the two together when no other stream used the block) is simply a free; a
// free that never completes stays unusable to the end (still pending when the snapshot was taken), unless
// the trace has no free_completed lines at all (v1 traces: every free is immediate).
//
// Unpaired lines are counted, not fatal: a free of an id never allocated in the trace (allocated before
// recording began), and the free and free_completed of an allocation that failed in replay (an OOM is
// caught, recorded, and replay goes on). Lines of other devices are skipped and counted.
//
// Note [A recorded OOM gives back the cache]. The trace's own `oom` lines are requests PyTorch refused and
// the program survived (cuDNN asks for a large workspace, catches the refusal and runs an algorithm that
// needs less). The refusal was not free: on its way to it PyTorch's allocator gave back every cached segment
// with nothing allocated in it (release_cached_blocks, as empty_cache does; expandable segments unmap their
// free pages; nothing while a CUDA graph is being captured), and the program went on with that smaller cache.
// So at such a line the replay empties the allocator's cache too; the request itself is not made (it was
// refused, and on a larger device than the program had, granting it would add what the program never held).
// Before, the line was only counted, and the replay kept a cache PyTorch no longer had: a U-Net trained at
// batch 42 under a 2 GiB cap, whose 24 refused cuDNN workspaces PyTorch survived with a peak of 1,984 MiB
// reserved, ran out four times in replay with the same peak (results/h200/replay-fidelity-580.159.04/).

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "harness/alloc/allocator.hpp"
#include "harness/replay/replay_trace.hpp"
#include "harness/stats/fragmentation.hpp"

namespace memstress::replay {

struct ReplayOptions {
  std::string device;                  // the trace's device to replay ("cuda:0"); empty: the first seen
  std::string device_what;             // the command's flag that gave `device`, in its error
  std::size_t timeline_points = 2000;  // at most this many timeline points
  std::size_t oom_points = 16;         // OOM points kept in detail (all are counted)
  // For `memstress doctor` (harness/doctor): the allocator's memory_stats() just after this event (an
  // index into the trace's events) into ReplayResult::captured.
  std::optional<std::uint64_t> capture_at_event;
  // At each of the recorded program's `oom` lines: the state then (ReplayResult::recorded_ooms) and, with
  // probe_recorded_ooms, at the one it did not survive (fatal_oom), whether this allocator would have
  // granted the request (it is allocated and freed at once: what the program did after its OOM is unknown),
  // a refusal ending a replay that stops at its first OOM.
  bool probe_recorded_ooms = false;
  // The cache emptied at each of those lines that is not probed (Note [A recorded OOM gives back the cache]).
  bool release_at_recorded_ooms = true;
  // Allocations (event index -> the bytes the program settles for, 0: none) whose refusal the program
  // survives: a library that tries a smaller workspace when refused (Note [A workspace PyTorch does
  // without], harness/doctor/batch_model.hpp). With none, the refusal is survived and the free skipped; else
  // that many bytes (at most the request) are asked for again, and only their refusal is an OOM. Each
  // refusal survived is counted in ReplayCounts::refusals_survived.
  std::unordered_map<std::uint64_t, std::uint64_t> survivable;
  bool stop_at_first_oom = false;                 // end the replay at its first OOM
  std::optional<std::uint64_t> stop_after_event;  // end the replay after this event index
};

enum class PendingFrees : std::uint8_t { record_stream, deferred };
[[nodiscard]] std::string_view to_string(PendingFrees mode) noexcept;

// One point of the timeline: the peaks over the stretch of events that ends at `event_index`.
struct TimelinePoint {
  std::uint64_t event_index = 0;  // index into the trace's events
  std::uint64_t time_ns = 0;
  std::int64_t allocated = 0;
  std::int64_t reserved = 0;
};

// An allocation that failed in replay.
struct OomPoint {
  std::uint64_t event_index = 0;
  std::uint64_t seq = 0;
  std::uint64_t time_ns = 0;
  std::uint64_t request_bytes = 0;
  std::uint64_t stream = 0;                        // the trace's stream id
  std::optional<std::int64_t> largest_free_block;  // when the allocator reports it
  std::int64_t reserved = 0;                       // at that moment
  std::int64_t allocated = 0;
  std::string message;  // the allocator's OutOfMemoryError
};

// The state at one of the recorded program's `oom` lines.
struct RecordedOom {
  std::uint64_t event_index = 0;
  std::uint64_t seq = 0;
  std::uint64_t time_ns = 0;
  std::uint64_t request_bytes = 0;  // as recorded: PyTorch records the rounded size
  std::uint64_t stream = 0;
  std::optional<std::int64_t> recorded_reserved;  // the recorded allocator's, from the segment lines
  std::int64_t reserved = 0;                      // this replay's, at that moment
  std::int64_t allocated = 0;
  std::optional<std::int64_t> largest_free_block;
  bool survived = false;              // the program went on after it (before fatal_oom): never probed
  std::optional<bool> probe_granted;  // with probe_recorded_ooms: whether the request was granted
  std::int64_t probe_reserved = 0;    // reserved while the granted probe held the request
  bool earlier_replay_oom = false;    // this replay had already failed an allocation before this line
};

struct ReplayCounts {
  std::uint64_t events = 0;  // lines of the replayed device
  std::uint64_t allocs = 0;
  std::uint64_t frees = 0;
  std::uint64_t frees_pending = 0;        // frees whose block stayed unusable until free_completed
  std::uint64_t unknown_frees = 0;        // free of an id not allocated in the trace: skipped
  std::uint64_t frees_of_failed = 0;      // free of an allocation that failed in replay: skipped
  std::uint64_t refusals_survived = 0;    // ReplayOptions::survivable allocations refused and gone on after
  std::uint64_t trace_ooms = 0;           // oom lines of the recorded program
  std::uint64_t segment_events = 0;       // the recorded allocator's segment lines
  std::uint64_t other_device_events = 0;  // lines of other devices: skipped
  std::uint64_t live_at_end = 0;          // allocations never freed in the trace
};

struct ReplayResult {
  std::string trace_device;                // the device of the trace replayed
  std::vector<std::string> other_devices;  // its other devices, not replayed
  std::string allocator;                   // the allocator's name
  std::string device_label;                // where: "sim:80G", "cuda:0"
  std::uint64_t capacity = 0;
  PendingFrees pending_frees = PendingFrees::deferred;
  ReplayCounts counts;
  std::int64_t peak_allocated = 0;  // PyTorch's allocated_bytes.all.peak
  std::int64_t peak_reserved = 0;   // reserved_bytes.all.peak
  std::int64_t peak_active = 0;     // active_bytes.all.peak
  std::int64_t peak_requested = 0;  // requested_bytes.all.peak
  // The recorded allocator's reserved peak, from the trace's segment lines (none when it has none).
  std::optional<std::int64_t> trace_peak_reserved;
  std::int64_t num_alloc_retries = 0;
  std::int64_t num_ooms = 0;    // replay OOMs
  Fragmentation fragmentation;  // at the end of the trace; utilization from the peaks
  std::vector<OomPoint> ooms;   // the first ReplayOptions::oom_points
  std::vector<TimelinePoint> timeline;
  MemoryStats final_stats;  // the allocator's memory_stats() at the end (peaks: of the last stretch)
  std::optional<MemoryStats> captured;     // at ReplayOptions::capture_at_event
  std::vector<RecordedOom> recorded_ooms;  // the recorded program's oom lines, in order
  bool stopped_early = false;              // stop_at_first_oom or stop_after_event ended it
};

// Replays `trace` through `allocator` (over its backend). Throws InputError when options.device is not a
// device of the trace or the trace allocates one id twice while live.
[[nodiscard]] ReplayResult replay_trace(const ReplayTrace& trace, Allocator& allocator,
                                        const ReplayOptions& options);

}  // namespace memstress::replay
