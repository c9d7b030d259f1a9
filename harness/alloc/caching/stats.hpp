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

// Indexed all / small_pool / large_pool, PyTorch's StatType order.
struct StatArray {
  std::array<Stat, 3> by_type{};

  void update(PoolKind kind, std::int64_t delta) noexcept {
    by_type[0].update(delta);
    by_type[kind == PoolKind::small ? 1 : 2].update(delta);
  }
  // update() for a delta of known sign (StatCounter::increase, decrease): the allocator's hot paths.
  void increase(PoolKind kind, std::int64_t amount) noexcept {
    by_type[0].increase(amount);
    by_type[kind == PoolKind::small ? 1 : 2].increase(amount);
  }
  void decrease(PoolKind kind, std::int64_t amount) noexcept {
    by_type[0].decrease(amount);
    by_type[kind == PoolKind::small ? 1 : 2].decrease(amount);
  }
  void reset_peak() noexcept {
    for (Stat& s : by_type) {
      s.reset_peak();
    }
  }
  StatArray& operator+=(const StatArray& other) noexcept {
    for (std::size_t i = 0; i < by_type.size(); ++i) {
      by_type[i] += other.by_type[i];
    }
    return *this;
  }
  StatArray& operator-=(const StatArray& other) noexcept {
    for (std::size_t i = 0; i < by_type.size(); ++i) {
      by_type[i] -= other.by_type[i];
    }
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
