#include "harness/doctor/doctor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>
#include <utility>

#include "harness/core/error.hpp"
#include "harness/core/units.hpp"
#include "harness/doctor/batch_model.hpp"
#include "harness/stats/fragmentation.hpp"

namespace memstress::doctor {
namespace {

// What PyTorch's allocator could use where the program ran, as the recorder measured it (none when it
// did not; the OOM's own figures may tell it later).
std::optional<std::uint64_t> recorded_capacity(const SnapshotFacts& facts, std::string& origin) {
  const std::optional<std::uint64_t> c = facts.recorded_number("allocator_capacity");
  if (c) {
    const auto it = facts.recorder.find("device_name");
    const std::string name = it != facts.recorder.end() && it->is_string() ? it->get<std::string>() : "GPU";
    origin = fmt::format("what PyTorch could use of the {} it was recorded on (the recorder)", name);
  }
  return c;
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
  // The steps are what repeats, request by request (Note [Steps are what repeats]): the program's allocs and
  // frees, not the allocator's segments or completions, whose timing varies.
  std::vector<std::size_t> requests;  // their positions in the walk
  std::vector<std::int64_t> live;
  std::vector<StepToken> tokens;
  for (std::size_t p = 0; p < walk.positions(); ++p) {
    const replay::Event& e = trace.events[walk.event_index[p]];
    if (e.action == replay::Action::alloc || e.action == replay::Action::free) {
      requests.push_back(p);
      live.push_back(walk.live[p]);
      tokens.push_back(StepToken{e.action, e.bytes});
    }
  }
  Steps steps = find_steps(live, tokens);
  g.steps = steps.verdict;
  g.step_requests = steps.period;
  g.kept_per_step = steps.kept;
  g.rise_per_step = steps.rise;
  g.requests = requests.size();
  for (std::uint32_t d = 0; d < trace.devices.size() && !g.ends_at_oom; ++d) {
    g.ends_at_oom = replay::fatal_oom(trace, d).has_value();  // any device's: one process, one end
  }
  g.ends_in_the_loop = steps.verdict == StepsVerdict::steps && g.ends_at_oom &&
                       requests.size() - steps.loop_end < steps.period;
  if (!g.judged()) {
    steps.floors.clear();  // a pass that ran out cannot be told from steps that keep
  }
  for (Floor& f : steps.floors) {
    f.position = requests[f.position];
  }
  g.floors = std::move(steps.floors);
  std::vector<std::int64_t> bytes;
  for (const Floor& f : g.floors) {
    bytes.push_back(f.bytes);
    g.floor_times_ns.push_back(trace.events[walk.event_index[f.position]].time_ns);
  }
  g.fit = fit_steps(bytes);
  g.falls_back = g.fit.growing() && g.fit.slope < 0.5 * g.kept_per_step;
  if (g.floor_times_ns.size() >= 2 && g.floor_times_ns.back() > g.floor_times_ns.front()) {
    const double step_s = static_cast<double>(g.floor_times_ns.back() - g.floor_times_ns.front()) / 1e9 /
                          static_cast<double>(g.floor_times_ns.size() - 1);
    g.bytes_per_second = g.fit.slope / step_s;
  }
  g.sites = growing_sites(walk, g.floors);
  return g;
}

// The largest `top` shares, then one row for the rest (kOtherSites).
std::vector<SiteShare> top_sites(std::vector<SiteShare> shares, std::size_t top) {
  if (shares.size() > top) {
    SiteShare rest{kOtherSites, 0, 0, 0};
    for (std::size_t i = top; i < shares.size(); ++i) {
      rest.bytes += shares[i].bytes;
      rest.count += shares[i].count;
      rest.largest = std::max(rest.largest, shares[i].largest);
    }
    shares.resize(top);
    shares.push_back(rest);
  }
  return shares;
}

// What was live when the program ran out, and the floor before it: what the step kept over the memory kept
// between steps (activations and the like) is what checkpointing or AMP shrinks.
void what_was_live_at_the_oom(const LiveWalk& walk, const GrowthAnswer& growth, OomAnalysis& oom) {
  if (oom.at.event == 0 || oom.at.event > walk.positions()) {
    return;
  }
  const std::size_t position = oom.at.event - 1;
  oom.live = walk.live[position];
  for (const Floor& f : growth.floors) {
    if (f.position < position) {
      oom.floor = f.bytes;
    }
  }
  oom.sites = top_sites(sites_live_at(walk, position), 3);
}

// With an OOM, the settings table recommends only the setting the OOM analysis named: one whose replay
// granted the request at the limit (none for exhaustion or an OOM not reproduced).
void recommend_only_what_grants(DoctorReport& r) {
  if (!r.oom || !r.oom->cause) {
    return;
  }
  SettingsAnswer& a = r.settings;
  a.recommended.reset();
  a.recommended_fits_all = false;
  if (!r.oom->named || r.oom->cause != OomCause::fragmentation) {
    return;
  }
  const replay::SweepSetting& named = r.oom->would_grant[*r.oom->named].setting;
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    if (same_setting(a.rows[i].setting, named)) {
      a.recommended = i;
      a.recommended_fits_all = std::all_of(a.rows[i].verdicts.begin(), a.rows[i].verdicts.end(),
                                           [](const CapacityVerdict& v) { return v.fits; });
    }
  }
}

// Note [What grows with the batch]. What activation checkpointing and AMP shrink is the memory a step makes
// and frees again, and a snapshot that ends in an OOM inside its first step has no floor between steps to
// tell it from what is kept (Note [Steps are what repeats], growth.hpp). Two batch runs do tell it: the batch
// model sizes every request at any batch, so the step's peak of live bytes at the OOM's batch less its peak
// at batch 1 is what grows with the batch (activations, workspaces), and the rest is what does not (weights,
// gradients, optimizer state, one sample's share aside).
std::int64_t peak_live(const replay::ReplayTrace& trace) {
  const LiveWalk walk = walk_live(trace, 0, SnapshotFacts{});  // the template holds one device's events
  return walk.live.empty() ? 0 : walk.live[walk.peak];
}

// With two runs of the program (--batch-runs), the whole step at the OOM's batch is replayed (Note
// [Fragmentation or exhaustion]): an OOM that only the one request decided is decided by the step, and an
// exhaustion gets the largest batch that fits the limit, as predict-batch finds it.
void decide_by_the_batch_runs(DoctorReport& r, const BatchRuns& runs) {
  constexpr std::uint64_t kMaxBatch = 1'000'000;
  if (!r.oom || !r.oom->limit || !r.oom->cause) {
    return;
  }
  const std::optional<GpuShape> gpu =
      gpu_of_runs(*runs.first, *runs.second, r.oom->limit->bytes, runs.multiprocessors);
  const BatchModel model =
      build_batch_model(*runs.first, *runs.second, runs.batches, r.trace_device, r.flags.trace_device, gpu);
  const std::uint64_t limit = r.oom->limit->bytes;
  if (r.recorded_batch && *r.recorded_batch > 0) {
    const std::uint64_t batch = *r.recorded_batch;
    decide_by_the_whole_step(*r.oom, [&](const replay::SweepSetting& setting, bool pessimistic) {
      return batch_fits(model, batch, setting, limit, pessimistic);
    });
  }
  if (r.oom->cause == OomCause::exhaustion) {
    const BatchAnswer answer = search_batch(model, r.setting, limit, kMaxBatch);
    r.batch_advice = BatchAdvice{.safe = answer.safe_fit ? answer.safe_fit->batch : 0,
                                 .estimate = answer.largest_fit ? answer.largest_fit->batch : 0,
                                 .top = std::nullopt};
    // An inferred limit lies in [limit, upper): the answer at the most it can be too, so that the advice
    // gives the range the cap leaves open rather than only its pessimistic end.
    if (const Limit& l = *r.oom->limit;
        l.source == LimitSource::inferred && l.upper && *l.upper > limit + 1) {
      const BatchAnswer top = search_batch(model, r.setting, *l.upper - 1, kMaxBatch);
      r.batch_advice->top = BatchAdvice::AtLimit{*l.upper - 1, top.safe_fit ? top.safe_fit->batch : 0,
                                                 top.largest_fit ? top.largest_fit->batch : 0};
    }
    if (r.recorded_batch && *r.recorded_batch > 1) {
      // Note [What grows with the batch].
      BatchAdvice& advice = *r.batch_advice;
      advice.batch = *r.recorded_batch;
      advice.peak_live = peak_live(trace_at(model, advice.batch));
      advice.grows_with_batch = std::max<std::int64_t>(advice.peak_live - peak_live(trace_at(model, 1)), 0);
    }
  }
}

}  // namespace

unsigned replays_side_by_side(const LiveWalk& walk, unsigned threads) noexcept {
  const unsigned most = threads != 0 ? threads : std::max(1U, std::thread::hardware_concurrency());
  const std::uint64_t one = walk.streams * kReplayStreamBytes + walk.most_live * kReplayBlockBytes;
  return static_cast<unsigned>(
      std::clamp<std::uint64_t>(kReplayBudget / std::max<std::uint64_t>(one, 1), 1, most));
}

std::string DoctorReport::site_name(std::int32_t site) const {
  if (site == kOtherSites) {
    return "(every other site)";
  }
  if (site == kBeforeRecording) {
    return "(allocated before recording began)";
  }
  if (site < 0 || static_cast<std::size_t>(site) >= sites.size()) {
    return frames_recorded ? "(no Python frames: from C++, e.g. the backward pass)"
                           : "(no stack frames recorded)";
  }
  return sites[static_cast<std::size_t>(site)].where;
}
DoctorReport diagnose(const DoctorInput& input, const DoctorOptions& options) {
  const replay::ReplayTrace& trace = input.trace;
  DoctorReport r;
  r.flags = options.flags;
  r.input = trace.name;
  r.source = input.facts.source;
  r.frames_recorded = input.facts.frames_recorded;
  r.sites = input.facts.sites;
  r.recorder = input.facts.recorder;
  r.recorded_batch = input.facts.recorded_number("batch");
  const std::uint32_t device = replay::device_index(trace, options.trace_device, options.flags.trace_device);
  r.trace_device = trace.devices[device];
  for (std::size_t i = 0; i < trace.devices.size(); ++i) {
    if (i != device) {
      r.other_devices.push_back(trace.devices[i]);
    }
  }
  SettingInForce in_force =
      setting_in_force(options.alloc_conf, options.flags.alloc_conf, input.facts, r.input, "the snapshot");
  r.setting = std::move(in_force.setting);
  r.setting_origin = std::move(in_force.origin);
  if (r.setting.allocator == "async") {
    throw InputError(fmt::format(
        "{}: the program ran with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, the driver's own pool, "
        "which a simulated device cannot replay; to judge PyTorch's caching allocator for it, give {} "
        "(e.g. {} '' for its defaults)",
        r.input, options.flags.alloc_conf, options.flags.alloc_conf));
  }
  LimitHint hint;
  if (!options.capacities.empty()) {
    hint.given = options.capacities.front();
    hint.given_origin = options.flags.capacity;
  }
  hint.recorded = recorded_capacity(input.facts, hint.recorded_origin);

  const LiveWalk walk = walk_live(trace, device, input.facts);
  const unsigned threads = replays_side_by_side(walk, options.threads);  // Note [Replays side by side]
  // Replays of the setting it ran with place segments where the driver did (SimBackend::follow_placements).
  const PlacementPlan plan = recorded_placements(trace, device, input.facts);
  replay::ReplayOptions base;
  base.device = r.trace_device;

  // Who held it at the peak.
  r.sites_at_peak = walk.positions() > 0 ? top_sites(sites_live_at(walk, walk.peak), options.top_sites)
                                         : std::vector<SiteShare>{};
  for (const SiteShare& s : r.sites_at_peak) {
    r.live_at_peak += static_cast<std::int64_t>(s.bytes);
  }

  // The OOM is judged at the limit in force (Note [The limit in force]), and that limit drives every
  // section below.
  const std::vector<replay::SweepSetting> grid = doctor_grid(r.setting);
  r.oom = analyse_oom(trace, walk, input.facts, plan, grid, r.setting, hint, base, threads);
  r.refusals = survived_refusals(trace, walk.device);
  // Without an OOM, --capacity only asks "what if": what it needed is replayed on what it had.
  std::optional<std::uint64_t> own = hint.recorded;
  std::string own_origin = hint.recorded_origin;
  if (r.oom && r.oom->limit) {
    own = r.oom->limit->bytes;
    own_origin = r.oom->limit->origin;
  }
  r.own_capacity = own;
  if (!options.capacities.empty()) {
    r.capacities = options.capacities;
    r.capacity_origin = options.flags.capacity;
  } else if (own) {
    r.capacities = {*own};
    r.capacity_origin = own_origin;
  } else {
    r.capacity_origin = fmt::format("none known (give {}, e.g. {} 24G,40G,80G)", options.flags.capacity,
                                    options.flags.capacity);
  }

  // What it needed, under its own setting, on the capacity it had: a program that ran near its limit
  // reserved less than it would have with room to spare. Where even that replay ran out (a replay is not
  // the program), or the capacity is not known, on a device with no limit.
  {
    replay::ReplayOptions options_here = base;
    if (!walk.event_index.empty()) {
      options_here.capture_at_event = walk.event_index[walk.peak];
    }
    replay::ReplayRun run = replay::replay_setting(
        trace, r.setting, sim_device(own.value_or(kUnconstrained), &plan), options_here);
    r.needed.on = own ? fmt::format("on the {} it had", human_bytes(*own)) : "on a device with no limit";
    if (own && run.result.num_ooms > 0) {
      run = replay::replay_setting(trace, r.setting, sim_device(kUnconstrained, &plan), options_here);
      r.needed.on = fmt::format("on a device with no limit: on the {} it had, the replay itself ran out",
                                human_bytes(*own));
    }
    const std::string on = r.needed.on;
    r.needed = needed_of(run.result, walk, trace);
    r.needed.on = on;
    r.timeline = run.result.timeline;
  }
  r.settings = judge_settings(trace, walk, input.facts, plan, grid, r.setting, r.capacities, base, threads);
  if (options.batch_runs) {
    decide_by_the_batch_runs(r, *options.batch_runs);
  }
  recommend_only_what_grants(r);
  r.peers = judge_peers(trace, options.peers, r.capacities, base);
  r.growth = growth_of(walk, trace);
  if (r.oom) {
    what_was_live_at_the_oom(walk, r.growth, *r.oom);
  }
  return r;
}

}  // namespace memstress::doctor
