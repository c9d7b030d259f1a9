#include "harness/doctor/oom.hpp"

#include <algorithm>

#include "harness/core/parallel.hpp"

namespace memstress::doctor {
namespace {

// The replay of `setting` up to the OOM line, the request tried there.
replay::RecordedOom at_the_oom(const replay::ReplayTrace& trace, const replay::SweepSetting& setting,
                               std::uint64_t capacity, std::uint64_t oom_index,
                               const replay::ReplayOptions& base, const PlacementPlan* plan) {
  replay::ReplayOptions options = base;
  options.timeline_points = 1;
  options.probe_recorded_ooms = true;
  options.stop_after_event = oom_index;
  const replay::ReplayResult r =
      replay::replay_setting(trace, setting, sim_device(capacity, plan), options).result;
  return r.recorded_ooms.empty() ? replay::RecordedOom{} : r.recorded_ooms.back();
}

}  // namespace

std::optional<OomAnalysis> analyse_oom(const replay::ReplayTrace& trace, const LiveWalk& walk,
                                       const SnapshotFacts& facts, const PlacementPlan& plan,
                                       const std::vector<replay::SweepSetting>& grid,
                                       const replay::SweepSetting& recorded,
                                       std::optional<std::uint64_t> capacity_given,
                                       const replay::ReplayOptions& base, unsigned threads) {
  std::optional<std::size_t> first;
  OomAnalysis a;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const replay::Event& e = trace.events[i];
    if (e.device == walk.device && e.action == replay::Action::oom) {
      first = first.value_or(i);
      ++a.count;
    }
  }
  if (!first) {
    return std::nullopt;
  }
  const replay::Event& e = trace.events[*first];
  a.at = OomAt{event_number(walk, *first), e.seq, e.time_ns, e.bytes, -1};
  // The facts list every device's oom entries in trace order; this device's first is its first.
  const std::string& label = trace.devices[walk.device];
  const auto fact =
      std::find_if(facts.ooms.begin(), facts.ooms.end(), [&](const OomFact& f) { return f.device == label; });
  if (fact != facts.ooms.end()) {
    a.device_free = fact->device_free;
    a.at.site = fact->site;
  }
  // The recorded allocator's reserved bytes then: a replay on a device too large to run out.
  const replay::RecordedOom unconstrained = at_the_oom(trace, recorded, kUnconstrained, *first, base, &plan);
  a.recorded_reserved = unconstrained.recorded_reserved;
  if (capacity_given) {
    a.capacity = capacity_given;
  } else if (a.device_free && a.recorded_reserved) {
    a.capacity = *a.device_free + static_cast<std::uint64_t>(*a.recorded_reserved);
  }
  if (!a.capacity) {
    a.reserved = unconstrained.reserved;
    a.allocated = unconstrained.allocated;
    a.largest_free_block = unconstrained.largest_free_block;
    return a;
  }
  const replay::RecordedOom own = at_the_oom(trace, recorded, *a.capacity, *first, base, &plan);
  a.reserved = own.reserved;
  a.allocated = own.allocated;
  a.largest_free_block = own.largest_free_block;
  a.replay_failed_earlier = own.earlier_replay_oom;
  if (own.probe_granted) {
    a.reproduced = !*own.probe_granted;
  }
  a.cause = own.allocated + static_cast<std::int64_t>(e.bytes) > static_cast<std::int64_t>(*a.capacity)
                ? OomCause::exhaustion
                : OomCause::fragmentation;
  std::vector<char> granted(grid.size(), 0);
  parallel_for(grid.size(), threads == 0 ? default_threads(grid.size()) : threads, [&](std::size_t i) {
    const replay::RecordedOom r = at_the_oom(
        trace, grid[i], *a.capacity, *first, base,
        grid[i].allocator == recorded.allocator && grid[i].conf == recorded.conf ? &plan : nullptr);
    granted[i] = r.probe_granted.value_or(false) && !r.earlier_replay_oom ? 1 : 0;
  });
  for (std::size_t i = 0; i < grid.size(); ++i) {
    if (granted[i] != 0) {
      a.would_grant.push_back(grid[i]);
    }
  }
  return a;
}

}  // namespace memstress::doctor
