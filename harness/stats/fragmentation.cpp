#include "harness/stats/fragmentation.hpp"

namespace memstress {
namespace {

std::int64_t get(const MemoryStats& s, const char* key, std::int64_t fallback = 0) {
  const auto it = s.find(key);
  return it == s.end() ? fallback : it->second;
}

}  // namespace

Fragmentation fragmentation(const MemoryStats& stats) {
  Fragmentation f;
  const std::int64_t allocated = get(stats, "allocated_bytes.all.current");
  const std::int64_t reserved = get(stats, "reserved_bytes.all.current");
  const std::int64_t active = get(stats, "active_bytes.all.current", allocated);
  f.reserved_minus_allocated = reserved - allocated;
  const std::int64_t peak_reserved = get(stats, "reserved_bytes.all.peak");
  if (peak_reserved > 0) {
    f.utilization =
        static_cast<double>(get(stats, "allocated_bytes.all.peak")) / static_cast<double>(peak_reserved);
  }
  const auto largest = stats.find("largest_free_block_bytes");
  const std::int64_t free = reserved - active;
  if (largest != stats.end() && free > 0) {
    f.external = 1.0 - static_cast<double>(largest->second) / static_cast<double>(free);
  }
  return f;
}

}  // namespace memstress
