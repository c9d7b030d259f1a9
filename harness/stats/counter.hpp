#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "harness/alloc/allocator.hpp"

namespace memstress {

// One PyTorch-style statistic: current, peak, and the totals ever allocated and freed.
struct StatCounter {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  std::int64_t allocated = 0;
  std::int64_t freed = 0;

  void add(std::int64_t amount) noexcept {
    current += amount;
    allocated += amount;
    peak = std::max(peak, current);
  }
  void sub(std::int64_t amount) noexcept {
    current -= amount;
    freed += amount;
  }
  void reset_peak() noexcept { peak = current; }

  // Writes "<prefix>.current", ".peak", ".allocated", ".freed".
  void export_to(MemoryStats& stats, std::string_view prefix) const {
    const std::string p(prefix);
    stats[p + ".current"] = current;
    stats[p + ".peak"] = peak;
    stats[p + ".allocated"] = allocated;
    stats[p + ".freed"] = freed;
  }
};

}  // namespace memstress
