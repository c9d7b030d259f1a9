#include "harness/replay/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "harness/alloc/factory.hpp"
#include "harness/core/parallel.hpp"
#include "harness/core/text_table.hpp"
#include "harness/core/units.hpp"

namespace memstress::replay {
namespace {

std::string join_conf(const std::vector<std::string>& parts) {
  return fmt::format("{}", fmt::join(parts, ","));
}

std::int64_t margin(const ReplayResult& r) {
  return static_cast<std::int64_t>(r.capacity) - r.peak_reserved;
}

}  // namespace

std::vector<SweepSetting> sweep_grid(const AllocConfig& base) {
  constexpr std::array<const char*, 4> kSplit{"", "max_split_size_mb:64", "max_split_size_mb:128",
                                              "max_split_size_mb:512"};
  constexpr std::array<const char*, 3> kRoundup{"", "roundup_power2_divisions:4",
                                                "roundup_power2_divisions:8"};
  constexpr std::array<const char*, 2> kGc{"", "garbage_collection_threshold:0.8"};
  std::vector<SweepSetting> grid;
  for (const char* allocator : {"caching", "expandable"}) {
    for (const char* split : kSplit) {
      for (const char* roundup : kRoundup) {
        for (const char* gc : kGc) {
          std::vector<std::string> parts = base.parts;
          for (const char* p : {split, roundup, gc}) {
            if (*p != '\0') {
              parts.emplace_back(p);
            }
          }
          // The grid's own parts after parts already parsed: nothing a user gave is parsed again.
          grid.push_back({allocator, AllocConfig::parse(join_conf(parts), "the sweep's grid")});
        }
      }
    }
  }
  grid.push_back({"direct", base});
  return grid;
}

ReplayRun replay_setting(const ReplayTrace& trace, const SweepSetting& setting,
                         const BackendFactory& make_device, const ReplayOptions& options) {
  const std::unique_ptr<DeviceBackend> device = make_device();
  AllocatorSpec spec;
  spec.name = setting.allocator;
  spec.conf = setting.conf;
  const std::unique_ptr<Allocator> allocator = make_allocator(spec, *device);
  return ReplayRun{setting.conf.text, replay_trace(trace, *allocator, options)};
}

Sweep run_sweep(const ReplayTrace& trace, const std::vector<SweepSetting>& grid,
                const BackendFactory& make_device, const ReplayOptions& options, unsigned threads) {
  Sweep sweep;
  sweep.rows.resize(grid.size());
  parallel_for(grid.size(), threads == 0 ? default_threads(grid.size()) : threads,
               [&](std::size_t i) { sweep.rows[i] = replay_setting(trace, grid[i], make_device, options); });
  std::stable_sort(sweep.rows.begin(), sweep.rows.end(), [](const ReplayRun& a, const ReplayRun& b) {
    const ReplayResult& x = a.result;
    const ReplayResult& y = b.result;
    return std::tie(x.peak_reserved, x.num_ooms, x.num_alloc_retries) <
           std::tie(y.peak_reserved, y.num_ooms, y.num_alloc_retries);
  });
  if (!sweep.rows.empty()) {
    sweep.best_by_peak_reserved = 0;
  }
  for (std::size_t i = 0; i < sweep.rows.size(); ++i) {
    const ReplayResult& r = sweep.rows[i].result;
    if (r.num_ooms == 0 &&
        (!sweep.best_by_oom_margin || margin(r) > margin(sweep.rows[*sweep.best_by_oom_margin].result))) {
      sweep.best_by_oom_margin = i;
    }
  }
  return sweep;
}

nlohmann::json sweep_json(const Sweep& sweep) {
  nlohmann::json rows = nlohmann::json::array();
  for (const ReplayRun& run : sweep.rows) {
    rows.push_back(replay_json(run));
  }
  const auto index = [](const std::optional<std::size_t>& i) { return i ? nlohmann::json(*i) : nullptr; };
  return {{"rows", rows},
          {"best_by_peak_reserved", index(sweep.best_by_peak_reserved)},
          {"best_by_oom_margin", index(sweep.best_by_oom_margin)}};
}

std::string format_sweep(const Sweep& sweep) {
  std::vector<TableLine> lines{{"rank", "allocator", "alloc-conf", "peak reserved", "peak allocated",
                                "utilization", "retries", "OOMs", "OOM margin"}};
  for (std::size_t i = 0; i < sweep.rows.size(); ++i) {
    const ReplayRun& run = sweep.rows[i];
    const ReplayResult& r = run.result;
    lines.push_back({std::to_string(i + 1), r.allocator, run.alloc_conf.empty() ? "-" : run.alloc_conf,
                     std::to_string(r.peak_reserved), std::to_string(r.peak_allocated),
                     fmt::format("{:.4f}", r.fragmentation.utilization), std::to_string(r.num_alloc_retries),
                     std::to_string(r.num_ooms),
                     human_bytes(static_cast<std::uint64_t>(std::max<std::int64_t>(margin(r), 0)))});
  }
  std::string out = render_table(lines);
  const auto describe = [&](std::size_t i) {
    const ReplayRun& run = sweep.rows[i];
    return fmt::format("{} {} (peak reserved {}, OOM margin {}, {} OOMs)", run.result.allocator,
                       run.alloc_conf.empty() ? "(defaults)" : run.alloc_conf,
                       human_bytes(static_cast<std::uint64_t>(run.result.peak_reserved)),
                       human_bytes(static_cast<std::uint64_t>(std::max<std::int64_t>(margin(run.result), 0))),
                       run.result.num_ooms);
  };
  if (sweep.best_by_peak_reserved) {
    out += fmt::format("\nbest by peak reserved: {}\n", describe(*sweep.best_by_peak_reserved));
  }
  out += sweep.best_by_oom_margin
             ? fmt::format("best by OOM margin (no OOM): {}\n", describe(*sweep.best_by_oom_margin))
             : std::string("best by OOM margin: none (every setting ran out of memory)\n");
  return out;
}

}  // namespace memstress::replay
