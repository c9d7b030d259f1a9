#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "harness/stats/memory_stats.hpp"

namespace memstress {

// One PyTorch-style statistic: current, peak, and the totals ever added and removed.
struct StatCounter {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  std::int64_t allocated = 0;
  std::int64_t freed = 0;

  // PyTorch's update_stat: a positive delta counts as allocated, a negative one as freed.
  void update(std::int64_t delta) noexcept {
    current += delta;
    if (delta >= 0) {
      allocated += delta;
    } else {
      freed -= delta;
    }
    peak = std::max(peak, current);
  }
  // update() for a delta known to be >= 0 (increase) or <= 0 (decrease, given as its size): the same
  // result without the branch, for hot paths. A decrease cannot raise the peak: peak >= current always holds.
  void increase(std::int64_t amount) noexcept {
    current += amount;
    allocated += amount;
    peak = std::max(peak, current);
  }
  void decrease(std::int64_t amount) noexcept {
    current -= amount;
    freed += amount;
  }
  void add(std::int64_t amount) noexcept { update(amount); }
  void sub(std::int64_t amount) noexcept { update(-amount); }
  void reset_peak() noexcept { peak = current; }
  // Sums another counter into this one (peaks add up: an upper bound of the combined peak).
  StatCounter& operator+=(const StatCounter& other) noexcept {
    current += other.current;
    peak += other.peak;
    allocated += other.allocated;
    freed += other.freed;
    return *this;
  }
  // Undoes a += (a sum kept up to date as its parts change).
  StatCounter& operator-=(const StatCounter& other) noexcept {
    current -= other.current;
    peak -= other.peak;
    allocated -= other.allocated;
    freed -= other.freed;
    return *this;
  }

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
