#include "harness/stats/memory_summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

#include "harness/core/units.hpp"
#include "harness/stats/fragmentation.hpp"

namespace memstress {
namespace {

constexpr std::size_t kWidth = 75;

std::int64_t get(const MemoryStats& s, const std::string& key) {
  const auto it = s.find(key);
  return it == s.end() ? 0 : it->second;
}

std::string format_size(std::int64_t value, std::int64_t reference) {
  static constexpr std::array<std::string_view, 6> kUnits{"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
  std::size_t unit = 0;
  auto scale = static_cast<double>(reference);
  while (scale >= 768.0 * 1024.0 && unit + 1 < kUnits.size()) {
    value /= 1024;
    scale /= 1024.0;
    ++unit;
  }
  return fmt::format("{:6d} {}", value, kUnits[unit]);
}

std::string format_count(std::int64_t value, std::int64_t reference) {
  static constexpr std::array<std::string_view, 3> kUnits{" ", "K", "M"};
  std::size_t unit = 0;
  auto scale = static_cast<double>(reference);
  while (scale >= 750000.0 && unit + 1 < kUnits.size()) {
    value /= 1000;
    scale /= 1000.0;
    ++unit;
  }
  return fmt::format("{:7d} {} ", value, kUnits[unit]);
}

}  // namespace

std::string memory_summary(const MemoryStats& stats, std::string_view title, bool abbreviated) {
  std::vector<std::string> lines;
  const std::string rule(kWidth, '=');
  const std::string thin(kWidth, '-');
  lines.push_back(rule);
  lines.push_back(fmt::format("{:^{}}", fmt::format("memstress memory summary, {}", title), kWidth));
  lines.push_back(thin);
  lines.push_back(fmt::format("{:<{}}",
                              fmt::format("  OOMs: {:<12d} | device allocation retries: {:<8d}",
                                          get(stats, "num_ooms"), get(stats, "num_alloc_retries")),
                              kWidth));
  lines.push_back(rule);
  lines.push_back("        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ");
  struct Metric {
    const char* key;
    const char* label;
    bool bytes;
  };
  static constexpr std::array<Metric, 9> kMetrics{{
      {"allocated_bytes", "Allocated memory", true},
      {"active_bytes", "Active memory", true},
      {"requested_bytes", "Requested memory", true},
      {"reserved_bytes", "GPU reserved memory", true},
      {"inactive_split_bytes", "Non-releasable memory", true},
      {"allocation", "Allocations", false},
      {"active", "Active allocs", false},
      {"segment", "GPU reserved segments", false},
      {"inactive_split", "Non-releasable allocs", false},
  }};
  static constexpr std::array<std::pair<const char*, const char*>, 3> kPools{
      {{"all", ""}, {"large_pool", "      from large pool"}, {"small_pool", "      from small pool"}}};
  static constexpr std::array<const char*, 4> kFields{"current", "peak", "allocated", "freed"};
  for (const Metric& m : kMetrics) {
    const std::string all = fmt::format("{}.all.", m.key);
    if (!stats.contains(all + "current")) {
      continue;
    }
    lines.push_back(thin);
    std::array<std::int64_t, 4> reference{};
    for (std::size_t f = 0; f < kFields.size(); ++f) {
      reference[f] = get(stats, all + kFields[f]);
    }
    for (const auto& [pool, pool_label] : kPools) {
      const std::string prefix = fmt::format("{}.{}.", m.key, pool);
      if (!stats.contains(prefix + "current") || (abbreviated && std::string_view(pool) != "all")) {
        continue;
      }
      std::string row = fmt::format(" {:<21} ", *pool_label == '\0' ? m.label : pool_label);
      for (std::size_t f = 0; f < kFields.size(); ++f) {
        const std::int64_t v = get(stats, prefix + kFields[f]);
        row += "| " + (m.bytes ? format_size(v, reference[f]) : format_count(v, reference[f])) + " ";
      }
      lines.push_back(row);
    }
  }
  for (const auto& [key, label] :
       std::array<std::pair<const char*, const char*>, 2>{{{"oversize_allocations", "Oversize allocations"},
                                                           {"oversize_segments", "Oversize GPU segments"}}}) {
    const std::string prefix = fmt::format("{}.", key);
    if (!stats.contains(prefix + "current")) {
      continue;
    }
    lines.push_back(thin);
    std::string row = fmt::format(" {:<21} ", label);
    for (const char* field : kFields) {
      const std::int64_t v = get(stats, prefix + field);
      row += "| " + format_count(v, v) + " ";
    }
    lines.push_back(row);
  }
  lines.push_back(rule);
  const Fragmentation frag = fragmentation(stats);
  lines.push_back(fmt::format(
      "{:<{}}",
      fmt::format(
          " Fragmentation: reserved - allocated {}, utilization {:.3f}, external {}",
          human_bytes(static_cast<std::uint64_t>(std::max<std::int64_t>(frag.reserved_minus_allocated, 0))),
          frag.utilization, frag.external ? fmt::format("{:.3f}", *frag.external) : "-"),
      kWidth));
  lines.push_back(rule);
  std::string out;
  for (const std::string& line : lines) {
    out += "|" + line + "|\n";
  }
  return out;
}

}  // namespace memstress
