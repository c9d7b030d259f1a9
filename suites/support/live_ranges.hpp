#pragma once

// The address ranges of the live blocks a workload holds: each new block must be aligned to 256 bytes
// (what cudaMalloc guarantees and every allocator must keep) and disjoint from every live block. The
// check the simulated device allows in place of data checks: an allocator that hands a block out twice is
// caught here. Not thread-safe: callers on several threads lock around it.

#include <cstdint>
#include <iterator>
#include <map>

namespace memstress::suites {

inline constexpr std::uintptr_t kAlignment = 256;

class LiveRanges {
 public:
  // Records [p, p + bytes); false when it is misaligned or overlaps a live block.
  bool add(const void* p, std::uint64_t bytes) {
    const auto start = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t end = start + bytes;
    bool ok = p != nullptr && start % kAlignment == 0;
    const auto next = ranges_.lower_bound(start);
    if (next != ranges_.end() && next->first < end) {
      ok = false;
    }
    if (next != ranges_.begin() && std::prev(next)->second > start) {
      ok = false;
    }
    ranges_.insert_or_assign(start, end);
    return ok;
  }
  void remove(const void* p) { ranges_.erase(reinterpret_cast<std::uintptr_t>(p)); }
  void clear() noexcept { ranges_.clear(); }

 private:
  std::map<std::uintptr_t, std::uintptr_t> ranges_;  // start -> end
};

}  // namespace memstress::suites
