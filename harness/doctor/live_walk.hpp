#pragma once

// The program's own view of its memory: which allocations were live when, walked from the trace alone
// (no allocator involved). An allocation is live from its `alloc` line to its `free` line (PyTorch's
// free_requested: when the program let go), so "live bytes" is the sum of the sizes the program asked
// for, PyTorch's requested_bytes. The doctor takes from it the moment of the peak, who held the memory
// then (by allocation site) and the floors between steps (harness/doctor/growth.hpp).

#include <cstdint>
#include <limits>
#include <vector>

#include "harness/doctor/facts.hpp"
#include "harness/replay/replay_trace.hpp"

namespace memstress::doctor {

// A position is the number of one of the device's events (0, 1, …), in trace order.
struct Interval {
  static constexpr std::uint32_t kLiveAtEnd = std::numeric_limits<std::uint32_t>::max();
  std::uint64_t id = 0;
  std::uint64_t bytes = 0;
  std::uint32_t begin = 0;         // position of its alloc
  std::uint32_t end = kLiveAtEnd;  // position of its free
  std::int32_t site = -1;
};

struct LiveWalk {
  std::uint32_t device = 0;
  std::vector<std::uint64_t> event_index;  // position -> index into the trace's events
  std::vector<std::int64_t> live;          // live bytes just after each position
  std::vector<Interval> intervals;         // in order of their allocs
  std::size_t peak = 0;                    // the first position where live is largest
  std::size_t most_live = 0;               // the most allocations live at once
  std::size_t streams = 0;                 // the streams it allocates on

  [[nodiscard]] std::size_t positions() const noexcept { return live.size(); }
};

// Walks the events of `device` (an index into trace.devices). Frees of ids it never saw allocated are
// left out (the replay counts them).
[[nodiscard]] LiveWalk walk_live(const replay::ReplayTrace& trace, std::uint32_t device,
                                 const SnapshotFacts& facts);

// What one site held live at one moment.
struct SiteShare {
  std::int32_t site = -1;  // -1: allocations without recorded frames
  std::uint64_t bytes = 0;
  std::uint64_t count = 0;
  std::uint64_t largest = 0;
};

// Every site's live allocations just after `position`, the largest share first.
[[nodiscard]] std::vector<SiteShare> sites_live_at(const LiveWalk& walk, std::size_t position);

}  // namespace memstress::doctor
