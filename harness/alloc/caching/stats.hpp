#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>

#include "harness/alloc/allocator.hpp"
#include "harness/alloc/caching/sizing.hpp"
#include "harness/stats/counter.hpp"

namespace memstress::caching {

using Stat = StatCounter;

// One statistic of one pool: PyTorch's current, peak and total added (StatCounter); the total removed is
// the total added less the current, so it is not kept.
struct PoolStat {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  std::int64_t allocated = 0;

  [[nodiscard]] std::int64_t freed() const noexcept { return allocated - current; }
};

// Indexed all / small_pool / large_pool, PyTorch's StatType order. Every change is to one pool and to all,
// so all's current and totals are the two pools' sums and only its peak is kept: 56 bytes, not 96 (every
// stream keeps nine of these, and a doctor of 200,000 streams holds them all).
struct StatArray {
  std::array<PoolStat, 2> pools{};  // PoolKind order: small, large
  std::int64_t all_peak = 0;

  [[nodiscard]] std::int64_t current_all() const noexcept { return pools[0].current + pools[1].current; }
  void update(PoolKind kind, std::int64_t delta) noexcept {
    if (delta >= 0) {
      increase(kind, delta);
    } else {
      decrease(kind, -delta);
    }
  }
  // update() for a delta of known sign: the allocator's hot paths. A decrease cannot raise a peak.
  void increase(PoolKind kind, std::int64_t amount) noexcept {
    PoolStat& s = pools[static_cast<std::size_t>(kind)];
    s.current += amount;
    s.allocated += amount;
    s.peak = std::max(s.peak, s.current);
    all_peak = std::max(all_peak, current_all());
  }
  void decrease(PoolKind kind, std::int64_t amount) noexcept {
    pools[static_cast<std::size_t>(kind)].current -= amount;
  }
  void reset_peak() noexcept {
    for (PoolStat& s : pools) {
      s.peak = s.current;
    }
    all_peak = current_all();
  }
  // Sums (peaks add up: an upper bound of the combined peak), and undoes a sum.
  StatArray& operator+=(const StatArray& other) noexcept {
    for (std::size_t i = 0; i < pools.size(); ++i) {
      pools[i].current += other.pools[i].current;
      pools[i].peak += other.pools[i].peak;
      pools[i].allocated += other.pools[i].allocated;
    }
    all_peak += other.all_peak;
    return *this;
  }
  StatArray& operator-=(const StatArray& other) noexcept {
    for (std::size_t i = 0; i < pools.size(); ++i) {
      pools[i].current -= other.pools[i].current;
      pools[i].peak -= other.pools[i].peak;
      pools[i].allocated -= other.pools[i].allocated;
    }
    all_peak -= other.all_peak;
    return *this;
  }
};

struct DeviceStats {
  StatArray allocation, segment, active, inactive_split;
  StatArray allocated_bytes, reserved_bytes, active_bytes, inactive_split_bytes, requested_bytes;
  Stat oversize_allocations, oversize_segments;
  std::int64_t num_device_alloc = 0;
  std::int64_t num_device_free = 0;

  void reset_peaks() noexcept;
  DeviceStats& operator+=(const DeviceStats& other) noexcept;
  DeviceStats& operator-=(const DeviceStats& other) noexcept;  // undoes a +=, peaks included
  // Writes PyTorch's flat keys ("allocated_bytes.all.current", …) for everything here.
  void export_to(MemoryStats& out) const;
};

}  // namespace memstress::caching
