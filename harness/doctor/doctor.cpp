#include "harness/doctor/doctor.hpp"

#include <fmt/format.h>

#include "harness/core/error.hpp"
#include "harness/core/units.hpp"
#include "harness/stats/fragmentation.hpp"

namespace memstress::doctor {
namespace {

constexpr std::uint64_t kUnconstrained = 1ULL << 40;

// The capacities to judge: as given, else what the recorder measured, else what the OOM implies.
void choose_capacities(DoctorReport& r, const DoctorInput& input, const DoctorOptions& options) {
  if (!options.capacities.empty()) {
    r.capacities = options.capacities;
    r.capacity_origin = "--capacity";
    return;
  }
  if (const auto c = input.facts.recorded_number("allocator_capacity")) {
    r.capacities = {*c};
    const std::string name = input.facts.recorder.value("device_name", std::string("the GPU"));
    r.capacity_origin =
        fmt::format("what PyTorch could use of the {} it was recorded on (the recorder)", name);
  }
}

Needed needed_of(const replay::ReplayResult& run, const LiveWalk& walk, const replay::ReplayTrace& trace) {
  Needed n;
  n.peak_allocated = run.peak_allocated;
  n.peak_reserved = run.peak_reserved;
  n.peak_requested = run.peak_requested;
  n.recorded_peak_reserved = run.trace_peak_reserved;
  n.utilization = run.fragmentation.utilization;
  if (run.captured) {
    const Fragmentation f = fragmentation(*run.captured);
    n.reserved_minus_allocated = f.reserved_minus_allocated;
    n.external_fragmentation = f.external;
  }
  n.events = walk.positions();
  if (!walk.event_index.empty()) {
    n.peak_event = walk.peak + 1;
    n.start_ns = trace.events[walk.event_index.front()].time_ns;
    n.peak_time_ns =
        trace.events[walk.event_index[walk.peak]].time_ns - trace.events[walk.event_index.front()].time_ns;
    n.duration_ns =
        trace.events[walk.event_index.back()].time_ns - trace.events[walk.event_index.front()].time_ns;
  }
  return n;
}

GrowthAnswer growth_of(const LiveWalk& walk, const replay::ReplayTrace& trace) {
  GrowthAnswer g;
  g.floors = find_floors(walk.live);
  std::vector<std::int64_t> bytes;
  for (const Floor& f : g.floors) {
    bytes.push_back(f.bytes);
    g.floor_times_ns.push_back(trace.events[walk.event_index[f.position]].time_ns);
  }
  g.fit = fit_steps(bytes);
  if (g.floor_times_ns.size() >= 2 && g.floor_times_ns.back() > g.floor_times_ns.front()) {
    const double step_s = static_cast<double>(g.floor_times_ns.back() - g.floor_times_ns.front()) / 1e9 /
                          static_cast<double>(g.floor_times_ns.size() - 1);
    g.bytes_per_second = g.fit.slope / step_s;
  }
  g.sites = growing_sites(walk, g.floors);
  return g;
}

}  // namespace

std::string DoctorReport::site_name(std::int32_t site) const {
  if (site == kOtherSites) {
    return "(every other site)";
  }
  if (site < 0 || static_cast<std::size_t>(site) >= sites.size()) {
    return frames_recorded ? "(no stack frames: allocated before recording began)"
                           : "(no stack frames recorded)";
  }
  return sites[static_cast<std::size_t>(site)].where;
}

DoctorReport diagnose(const DoctorInput& input, const DoctorOptions& options) {
  const replay::ReplayTrace& trace = input.trace;
  DoctorReport r;
  r.input = trace.name;
  r.source = input.facts.source;
  r.frames_recorded = input.facts.frames_recorded;
  r.sites = input.facts.sites;
  r.recorder = input.facts.recorder;
  const std::uint32_t device = replay::device_index(trace, options.trace_device);
  r.trace_device = trace.devices[device];
  for (std::size_t i = 0; i < trace.devices.size(); ++i) {
    if (i != device) {
      r.other_devices.push_back(trace.devices[i]);
    }
  }
  if (options.alloc_conf) {
    r.setting = setting_from_pytorch_conf(*options.alloc_conf, "--alloc-conf");
    r.setting_origin = "--alloc-conf";
  } else if (input.facts.alloc_conf) {
    r.setting = setting_from_pytorch_conf(*input.facts.alloc_conf,
                                          fmt::format("{}: its allocator_settings", r.input));
    r.setting_origin = "the snapshot";
  } else {
    r.setting = {"caching", ""};
    r.setting_origin = "assumed: PyTorch's defaults (the input does not say; give --alloc-conf)";
  }
  choose_capacities(r, input, options);

  const LiveWalk walk = walk_live(trace, device, input.facts);
  // Replays of the setting it ran with place segments where the driver did (SimBackend::follow_placements).
  const PlacementPlan plan = recorded_placements(trace, device, input.facts);
  replay::ReplayOptions base;
  base.device = r.trace_device;

  // Who held it at the peak.
  std::vector<SiteShare> shares =
      walk.positions() > 0 ? sites_live_at(walk, walk.peak) : std::vector<SiteShare>{};
  for (const SiteShare& s : shares) {
    r.live_at_peak += static_cast<std::int64_t>(s.bytes);
  }
  if (shares.size() > options.top_sites) {
    SiteShare rest{kOtherSites, 0, 0, 0};
    for (std::size_t i = options.top_sites; i < shares.size(); ++i) {
      rest.bytes += shares[i].bytes;
      rest.count += shares[i].count;
      rest.largest = std::max(rest.largest, shares[i].largest);
    }
    shares.resize(options.top_sites);
    shares.push_back(rest);
  }
  r.sites_at_peak = std::move(shares);

  const std::vector<replay::SweepSetting> grid = doctor_grid(r.setting);
  // A capacity given or recorded is what PyTorch could use; without one the OOM's own figures tell it.
  r.oom = analyse_oom(trace, walk, input.facts, plan, grid, r.setting,
                      r.capacities.empty() ? std::nullopt : std::optional(r.capacities.front()), base,
                      options.threads);
  if (r.capacities.empty() && r.oom && r.oom->capacity) {
    r.capacities = {*r.oom->capacity};
    r.capacity_origin = "what PyTorch could use when it ran out (reserved + the device's free memory then)";
  }
  if (r.capacities.empty()) {
    r.capacity_origin = "none known (give --capacity, e.g. --capacity 24G,40G,80G)";
  }
  // What it needed, under its own setting, on the capacity it had (the first judged; unlimited when none
  // is known): a program that ran near its limit reserved less than it would have with room to spare.
  {
    replay::ReplayOptions options_here = base;
    if (!walk.event_index.empty()) {
      options_here.capture_at_event = walk.event_index[walk.peak];
    }
    const std::uint64_t capacity = r.capacities.empty() ? kUnconstrained : r.capacities.front();
    const replay::ReplayRun run =
        replay::replay_setting(trace, r.setting, sim_device(capacity, &plan), options_here);
    r.needed = needed_of(run.result, walk, trace);
    r.timeline = run.result.timeline;
  }
  r.settings =
      judge_settings(trace, walk, input.facts, plan, grid, r.setting, r.capacities, base, options.threads);
  r.growth = growth_of(walk, trace);
  return r;
}

}  // namespace memstress::doctor
