#include "harness/doctor/settings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string_view>
#include <tuple>

#include "harness/alloc/alloc_config.hpp"
#include "harness/core/error.hpp"
#include "harness/core/parallel.hpp"
#include "harness/core/units.hpp"
#include "harness/memory/device_spec.hpp"
#include "harness/memory/gpu_backend.hpp"

namespace memstress::doctor {
namespace {

constexpr std::string_view kExpandable = "expandable_segments:True";

// A part's key: "max_split_size_mb" of "max_split_size_mb:128".
std::string_view key_of(std::string_view part) {
  return part.substr(0, part.find(':'));
}

}  // namespace

bool same_setting(const replay::SweepSetting& a, const replay::SweepSetting& b) {
  return a.allocator == b.allocator && a.conf.parts == b.conf.parts;
}

std::size_t knobs(const replay::SweepSetting& setting) {
  const bool named = setting.allocator == "async" || setting.allocator == "expandable";
  return setting.conf.parts.size() + (named ? 1 : 0);
}

std::string pytorch_conf(const replay::SweepSetting& setting) {
  const std::string& conf = setting.conf.text;
  if (setting.allocator == "async") {
    return conf.empty() ? "backend:cudaMallocAsync" : fmt::format("backend:cudaMallocAsync,{}", conf);
  }
  if (setting.allocator != "expandable") {
    return conf;
  }
  return conf.empty() ? std::string(kExpandable) : fmt::format("{},{}", kExpandable, conf);
}

replay::SweepSetting setting_of(const AllocConfig& config) {
  replay::SweepSetting s{config.expandable_segments ? "expandable" : "caching", config};
  if (config.backend == "cudaMallocAsync") {
    s.allocator = "async";  // PyTorch's other backend: the driver's pool, not the caching allocator
  }
  // The allocator's name says what expandable_segments and backend said: the setting keeps the rest.
  s.conf.expandable_segments = false;
  s.conf.backend.clear();
  std::erase_if(s.conf.parts, [](const std::string& part) {
    return key_of(part) == "expandable_segments" || key_of(part) == "backend";
  });
  s.conf.text = fmt::format("{}", fmt::join(s.conf.parts, ","));
  return s;
}

replay::SweepSetting setting_from_pytorch_conf(const std::string& conf, const std::string& what) {
  return setting_of(AllocConfig::parse(conf, what));  // InputError naming `what`
}

SettingInForce setting_in_force(const std::optional<AllocConfig>& given, std::string_view flag,
                                const SnapshotFacts& facts, const std::string& name,
                                std::string_view recorded) {
  if (given) {
    return {setting_of(*given), std::string(flag)};
  }
  if (facts.alloc_conf) {
    return {setting_from_pytorch_conf(*facts.alloc_conf, fmt::format("{}: its allocator_settings", name)),
            std::string(recorded)};
  }
  return {{"caching", {}},
          fmt::format("assumed: PyTorch's defaults (the input does not say; give {})", flag)};
}

std::uint64_t parse_capacity(const std::string& text, std::string_view what) {
  const std::uint64_t c = parse_bytes(text, what);
  if (c == 0 || c > kMaxCapacity) {
    throw InputError(fmt::format("{} '{}': a capacity must be more than 0 bytes and at most {}", what, text,
                                 format_bytes(kMaxCapacity)));
  }
  return c;
}

std::vector<std::uint64_t> parse_capacities(const std::string& text, std::string_view what) {
  std::vector<std::uint64_t> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    out.push_back(parse_capacity(item, what));
  }
  if (out.empty()) {
    throw InputError(fmt::format("{} '{}': give one or more sizes, e.g. 24G,40G,80G", what, text));
  }
  return out;
}

std::vector<replay::SweepSetting> doctor_grid(const replay::SweepSetting& recorded) {
  std::vector<replay::SweepSetting> grid = replay::sweep_grid();
  if (std::none_of(grid.begin(), grid.end(), [&](const auto& s) { return same_setting(s, recorded); })) {
    grid.push_back(recorded);
  }
  return grid;
}

PlacementPlan recorded_placements(const replay::ReplayTrace& trace, std::uint32_t device,
                                  const SnapshotFacts& facts) {
  PlacementPlan plan;
  std::uint64_t lowest = std::numeric_limits<std::uint64_t>::max();
  for (const replay::Event& e : trace.events) {
    if (e.device != device || e.action != replay::Action::segment_alloc) {
      continue;
    }
    const std::uint64_t address = e.id < facts.segment_addresses.size() ? facts.segment_addresses[e.id] : 0;
    if (address == 0) {
      break;  // the plan ends where the record does
    }
    plan.push_back({e.bytes, address});
    lowest = std::min(lowest, address);
  }
  for (PlannedReservation& p : plan) {
    p.offset -= lowest;
  }
  return plan;
}

replay::BackendFactory sim_device(std::uint64_t capacity, const PlacementPlan* plan) {
  return [capacity, plan] {
    auto device = std::make_unique<SimBackend>(capacity, SimAddressOrder::cuda_like);
    if (plan != nullptr) {
      device->follow_placements(*plan);
    }
    return std::unique_ptr<DeviceBackend>(std::move(device));
  };
}

std::int32_t oom_site(const SnapshotFacts& facts, const replay::ReplayTrace& trace, const LiveWalk& walk,
                      std::size_t nth) {
  const std::string& label = trace.devices[walk.device];
  for (const OomFact& f : facts.ooms) {
    if (f.device == label && nth-- == 0) {
      return f.site;
    }
  }
  return -1;
}

std::uint64_t event_number(const LiveWalk& walk, std::uint64_t event_index) noexcept {
  const auto it = std::lower_bound(walk.event_index.begin(), walk.event_index.end(), event_index);
  return static_cast<std::uint64_t>(it - walk.event_index.begin()) + 1;
}

std::optional<OomAt> first_oom(const replay::ReplayResult& result, const replay::ReplayTrace& trace,
                               const LiveWalk& walk, const SnapshotFacts& facts) {
  std::optional<OomAt> at;
  if (!result.ooms.empty()) {
    const replay::OomPoint& p = result.ooms.front();
    at = OomAt{event_number(walk, p.event_index), p.seq, p.time_ns, p.request_bytes,
               facts.site_of(trace.events[p.event_index].id)};
  }
  // A request the recorded program made and could not have (its own OOM, probed): refused here too.
  std::size_t k = 0;
  for (const replay::RecordedOom& o : result.recorded_ooms) {
    const std::size_t nth = k++;
    if (o.survived || o.probe_granted.value_or(true) || (at && at->seq < o.seq)) {
      continue;
    }
    at = OomAt{event_number(walk, o.event_index), o.seq, o.time_ns, o.request_bytes,
               oom_site(facts, trace, walk, nth)};
    break;
  }
  return at;
}
SettingsAnswer judge_settings(const replay::ReplayTrace& trace, const LiveWalk& walk,
                              const SnapshotFacts& facts, const PlacementPlan& plan,
                              const std::vector<replay::SweepSetting>& grid,
                              const replay::SweepSetting& recorded,
                              const std::vector<std::uint64_t>& capacities, const replay::ReplayOptions& base,
                              unsigned threads) {
  SettingsAnswer answer;
  answer.unconstrained_capacity = std::max(
      kUnconstrained, capacities.empty() ? 0 : 2 * *std::max_element(capacities.begin(), capacities.end()));
  replay::ReplayOptions options = base;
  options.timeline_points = 1;
  answer.rows.resize(grid.size());
  const bool ran_out = replay::fatal_oom(trace, walk.device).has_value();  // an OOM it did not survive
  const auto plan_for = [&](const replay::SweepSetting& s) {
    return same_setting(s, recorded) ? &plan : nullptr;
  };
  parallel_for(grid.size(), threads == 0 ? default_threads(grid.size()) : threads, [&](std::size_t i) {
    const replay::ReplayResult r =
        replay::replay_setting(trace, grid[i], sim_device(answer.unconstrained_capacity, plan_for(grid[i])),
                               options)
            .result;
    SettingRow& row = answer.rows[i];
    row.setting = grid[i];
    row.peak_reserved = r.peak_reserved;
    row.peak_allocated = r.peak_allocated;
    row.utilization = r.fragmentation.utilization;
    row.retries = r.num_alloc_retries;
    for (const std::uint64_t c : capacities) {
      // With an OOM in the recording, the request that failed must be tried too: every capacity is replayed.
      row.verdicts.push_back(CapacityVerdict{c, !ran_out && r.peak_reserved <= static_cast<std::int64_t>(c),
                                             true, false, std::nullopt});
    }
  });
  // Settings that asked for more than a capacity: replayed on exactly that capacity.
  struct Job {
    std::size_t row;
    std::size_t verdict;
  };
  std::vector<Job> jobs;
  for (std::size_t r = 0; r < answer.rows.size(); ++r) {
    for (std::size_t v = 0; v < capacities.size(); ++v) {
      if (!answer.rows[r].verdicts[v].fits) {
        jobs.push_back({r, v});
      }
    }
  }
  replay::ReplayOptions until_oom = options;
  until_oom.stop_at_first_oom = true;
  until_oom.probe_recorded_ooms = ran_out;
  parallel_for(jobs.size(), threads == 0 ? default_threads(jobs.size()) : threads, [&](std::size_t j) {
    SettingRow& row = answer.rows[jobs[j].row];
    CapacityVerdict& verdict = row.verdicts[jobs[j].verdict];
    const replay::ReplayRun run = replay::replay_setting(
        trace, row.setting, sim_device(verdict.capacity, plan_for(row.setting)), until_oom);
    verdict.replayed = true;
    verdict.oom = first_oom(run.result, trace, walk, facts);
    verdict.fits = !verdict.oom.has_value();
  });
  // Lowest peak first; at equal peaks, settings with the same figures together, the one with fewer parts
  // first (PyTorch's defaults before any change).
  std::stable_sort(answer.rows.begin(), answer.rows.end(), [](const SettingRow& a, const SettingRow& b) {
    return std::tuple(a.peak_reserved, a.peak_allocated, knobs(a.setting), a.retries) <
           std::tuple(b.peak_reserved, b.peak_allocated, knobs(b.setting), b.retries);
  });
  for (std::size_t r = 0; r < answer.rows.size(); ++r) {
    const SettingRow& row = answer.rows[r];
    if (same_setting(row.setting, recorded) && !answer.recorded) {
      answer.recorded = r;
    }
    if (row.setting.allocator == "direct") {
      continue;
    }
    const bool fits =
        std::all_of(row.verdicts.begin(), row.verdicts.end(), [](const auto& v) { return v.fits; });
    if (!answer.recommended || (fits && !answer.recommended_fits_all)) {
      answer.recommended = r;
      answer.recommended_fits_all = fits;
    }
  }
  return answer;
}

std::vector<PeerRow> judge_peers(const replay::ReplayTrace& trace, const std::vector<std::string>& allocators,
                                 const std::vector<std::uint64_t>& capacities,
                                 const replay::ReplayOptions& base) {
  replay::ReplayOptions options = base;
  options.timeline_points = 1;
  const replay::BackendFactory gpu = [] { return make_gpu_backend(0); };
  std::vector<PeerRow> rows;
  for (const std::string& name : allocators) {
    PeerRow row;
    row.allocator = name;
    const replay::SweepSetting setting{name, {}};
    std::optional<replay::ReplayResult> result;
    try {
      result = replay::replay_setting(trace, setting, sim_device(kUnconstrained), options).result;
      row.device = "sim";
    } catch (const EnvironmentError& on_sim) {
      if (gpu_count() == 0) {
        row.skipped = fmt::format("no GPU here, and {}", on_sim.what());
      } else {
        try {
          result = replay::replay_setting(trace, setting, gpu, options).result;
          row.device = "cuda:0";
        } catch (const EnvironmentError& on_gpu) {
          row.skipped = on_gpu.what();
        }
      }
    }
    if (result) {
      row.peak_reserved = result->peak_reserved;
      row.peak_allocated = result->peak_allocated;
      row.utilization = result->fragmentation.utilization;
      row.ooms = result->num_ooms;
      // On the GPU an OOM is that GPU's: capacities above it are not judged.
      const bool oom_on_gpu = row.ooms > 0 && row.device == "cuda:0";
      for (const std::uint64_t c : capacities) {
        row.verdicts.push_back(
            CapacityVerdict{c, row.ooms == 0 && row.peak_reserved <= static_cast<std::int64_t>(c),
                            !(oom_on_gpu && c > result->capacity), false, std::nullopt});
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace memstress::doctor
