#pragma once

// `memstress replay --sweep`: one trace replayed under a grid of allocators and settings, each on a fresh
// device, ranked by peak reserved bytes.
//
// Design note. The grid is caching and expandable (= caching with expandable_segments:True, so the
// grid's expandable_segments axis is the allocator axis) crossed with max_split_size_mb {none, 64, 128,
// 512}, roundup_power2_divisions {none, 4, 8} and garbage_collection_threshold {none, 0.8}, plus direct
// (which has no settings): 49 replays. As in PyTorch, garbage_collection_threshold acts only under a
// per_process_memory_fraction, so its rows equal their neighbours unless the base --alloc-conf sets one;
// the base --alloc-conf is prepended to every setting. Two bests: by peak reserved (the lowest of all
// rows) and by OOM margin (capacity - peak reserved, the largest among rows without an OOM: a setting
// that failed allocations has a peak that looks better than it is).

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/alloc/alloc_config.hpp"
#include "harness/memory/backend.hpp"
#include "harness/replay/report.hpp"

namespace memstress::replay {

// An allocator and its settings, parsed (conf.text is the setting as the tables and documents show it).
struct SweepSetting {
  std::string allocator;
  AllocConfig conf;
};

// `base`'s parts come first in every setting.
[[nodiscard]] std::vector<SweepSetting> sweep_grid(const AllocConfig& base = {});

struct Sweep {
  std::vector<ReplayRun> rows;  // sorted by peak reserved (then OOMs, then retries)
  std::optional<std::size_t> best_by_peak_reserved;
  std::optional<std::size_t> best_by_oom_margin;  // none when every row had an OOM
};

// Builds a fresh device for one replay; called from several threads at once.
using BackendFactory = std::function<std::unique_ptr<DeviceBackend>()>;
// Each setting on its own device, `threads` replays at a time (0: one per hardware thread).
[[nodiscard]] Sweep run_sweep(const ReplayTrace& trace, const std::vector<SweepSetting>& grid,
                              const BackendFactory& make_device, const ReplayOptions& options,
                              unsigned threads = 0);
// One replay of `setting` on a fresh device from `make_device` (what run_sweep does for each row).
[[nodiscard]] ReplayRun replay_setting(const ReplayTrace& trace, const SweepSetting& setting,
                                       const BackendFactory& make_device, const ReplayOptions& options);

[[nodiscard]] nlohmann::json sweep_json(const Sweep& sweep);
[[nodiscard]] std::string format_sweep(const Sweep& sweep);

}  // namespace memstress::replay
