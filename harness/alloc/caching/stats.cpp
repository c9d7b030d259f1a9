#include "harness/alloc/caching/stats.hpp"

#include <array>
#include <string>
#include <string_view>
#include <utility>

namespace memstress::caching {
namespace {

void put(MemoryStats& out, std::string_view name, const StatArray& a) {
  const PoolStat& small = a.pools[static_cast<std::size_t>(PoolKind::small)];
  const PoolStat& large = a.pools[static_cast<std::size_t>(PoolKind::large)];
  const StatCounter all{a.current_all(), a.all_peak, small.allocated + large.allocated,
                        small.freed() + large.freed()};
  all.export_to(out, std::string(name) + ".all");
  for (const auto& [pool, type] : {std::pair{&small, "small_pool"}, std::pair{&large, "large_pool"}}) {
    const StatCounter c{pool->current, pool->peak, pool->allocated, pool->freed()};
    c.export_to(out, std::string(name) + "." + type);
  }
}

// Every StatArray of DeviceStats with PyTorch's name for it: the one list that resetting, adding,
// subtracting and exporting walk, so that a statistic added here is never missed by one of them.
constexpr std::array<std::pair<StatArray DeviceStats::*, std::string_view>, 9> kArrays{{
    {&DeviceStats::allocation, "allocation"},
    {&DeviceStats::segment, "segment"},
    {&DeviceStats::active, "active"},
    {&DeviceStats::inactive_split, "inactive_split"},
    {&DeviceStats::allocated_bytes, "allocated_bytes"},
    {&DeviceStats::reserved_bytes, "reserved_bytes"},
    {&DeviceStats::active_bytes, "active_bytes"},
    {&DeviceStats::inactive_split_bytes, "inactive_split_bytes"},
    {&DeviceStats::requested_bytes, "requested_bytes"},
}};

}  // namespace

void DeviceStats::reset_peaks() noexcept {
  for (const auto& [member, name] : kArrays) {
    (this->*member).reset_peak();
  }
  oversize_allocations.reset_peak();
  oversize_segments.reset_peak();
}

DeviceStats& DeviceStats::operator+=(const DeviceStats& o) noexcept {
  for (const auto& [member, name] : kArrays) {
    this->*member += o.*member;
  }
  oversize_allocations += o.oversize_allocations;
  oversize_segments += o.oversize_segments;
  num_device_alloc += o.num_device_alloc;
  num_device_free += o.num_device_free;
  return *this;
}

DeviceStats& DeviceStats::operator-=(const DeviceStats& o) noexcept {
  for (const auto& [member, name] : kArrays) {
    this->*member -= o.*member;
  }
  oversize_allocations -= o.oversize_allocations;
  oversize_segments -= o.oversize_segments;
  num_device_alloc -= o.num_device_alloc;
  num_device_free -= o.num_device_free;
  return *this;
}

void DeviceStats::export_to(MemoryStats& out) const {
  for (const auto& [member, name] : kArrays) {
    put(out, name, this->*member);
  }
  oversize_allocations.export_to(out, "oversize_allocations");
  oversize_segments.export_to(out, "oversize_segments");
  out["num_device_alloc"] = num_device_alloc;
  out["num_device_free"] = num_device_free;
}

}  // namespace memstress::caching
