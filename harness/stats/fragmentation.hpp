#pragma once

#include <cstdint>
#include <optional>

#include "harness/stats/memory_stats.hpp"

namespace memstress {

// The three fragmentation figures, named plainly:
//   reserved_minus_allocated — bytes the allocator holds that no one is using;
//   utilization — peak allocated / peak reserved (GMLake's metric; 1 is perfect);
//   external — 1 - largest free block / total free (RMM's arena metric; 0 when free memory is one piece),
//              where "free" is what the allocator has cached and could hand out (reserved - active).
// external is empty when the allocator does not report its largest free block, or nothing is free.
struct Fragmentation {
  std::int64_t reserved_minus_allocated = 0;
  double utilization = 1.0;
  std::optional<double> external;
};

Fragmentation fragmentation(const MemoryStats& stats);

}  // namespace memstress
