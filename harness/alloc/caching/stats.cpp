#include "harness/alloc/caching/stats.hpp"

#include <string>

namespace memstress::caching {
namespace {

void put(MemoryStats& out, std::string_view name, const StatArray& a) {
  static constexpr std::array<std::string_view, 3> kTypes{"all", "small_pool", "large_pool"};
  for (std::size_t i = 0; i < kTypes.size(); ++i) {
    a.by_type[i].export_to(out, std::string(name) + "." + std::string(kTypes[i]));
  }
}

}  // namespace

void DeviceStats::reset_peaks() noexcept {
  for (StatArray* a : {&allocation, &segment, &active, &inactive_split, &allocated_bytes, &reserved_bytes,
                       &active_bytes, &inactive_split_bytes, &requested_bytes}) {
    a->reset_peak();
  }
  oversize_allocations.reset_peak();
  oversize_segments.reset_peak();
}

DeviceStats& DeviceStats::operator+=(const DeviceStats& o) noexcept {
  allocation += o.allocation;
  segment += o.segment;
  active += o.active;
  inactive_split += o.inactive_split;
  allocated_bytes += o.allocated_bytes;
  reserved_bytes += o.reserved_bytes;
  active_bytes += o.active_bytes;
  inactive_split_bytes += o.inactive_split_bytes;
  requested_bytes += o.requested_bytes;
  oversize_allocations += o.oversize_allocations;
  oversize_segments += o.oversize_segments;
  num_device_alloc += o.num_device_alloc;
  num_device_free += o.num_device_free;
  return *this;
}

DeviceStats& DeviceStats::operator-=(const DeviceStats& o) noexcept {
  allocation -= o.allocation;
  segment -= o.segment;
  active -= o.active;
  inactive_split -= o.inactive_split;
  allocated_bytes -= o.allocated_bytes;
  reserved_bytes -= o.reserved_bytes;
  active_bytes -= o.active_bytes;
  inactive_split_bytes -= o.inactive_split_bytes;
  requested_bytes -= o.requested_bytes;
  oversize_allocations -= o.oversize_allocations;
  oversize_segments -= o.oversize_segments;
  num_device_alloc -= o.num_device_alloc;
  num_device_free -= o.num_device_free;
  return *this;
}

void DeviceStats::export_to(MemoryStats& out) const {
  put(out, "allocation", allocation);
  put(out, "segment", segment);
  put(out, "active", active);
  put(out, "inactive_split", inactive_split);
  put(out, "allocated_bytes", allocated_bytes);
  put(out, "reserved_bytes", reserved_bytes);
  put(out, "active_bytes", active_bytes);
  put(out, "inactive_split_bytes", inactive_split_bytes);
  put(out, "requested_bytes", requested_bytes);
  oversize_allocations.export_to(out, "oversize_allocations");
  oversize_segments.export_to(out, "oversize_segments");
  out["num_device_alloc"] = num_device_alloc;
  out["num_device_free"] = num_device_free;
}

}  // namespace memstress::caching
