#include "harness/doctor/oom.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "harness/core/error.hpp"
#include "harness/core/parallel.hpp"
#include "harness/core/units.hpp"

namespace memstress::doctor {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;

struct AtTheOom {
  replay::RecordedOom oom;
  std::optional<std::int64_t> trace_peak_reserved;  // the recorded allocator's, up to the OOM
  std::int64_t peak_reserved = 0;                   // the replay's, up to the OOM
};

// The replay of `setting` up to the OOM line, the request tried there when `probe`.
AtTheOom at_the_oom(const replay::ReplayTrace& trace, const replay::SweepSetting& setting,
                    std::uint64_t capacity, std::uint64_t oom_index, const replay::ReplayOptions& base,
                    const PlacementPlan* plan, bool probe = true) {
  replay::ReplayOptions options = base;
  options.timeline_points = 1;
  options.probe_recorded_ooms = probe;
  options.stop_after_event = oom_index;
  const replay::ReplayResult r =
      replay::replay_setting(trace, setting, sim_device(capacity, plan), options).result;
  return {r.recorded_ooms.empty() ? replay::RecordedOom{} : r.recorded_ooms.back(), r.trace_peak_reserved,
          r.peak_reserved};
}

// The device's oom lines among the first `end` events: how many, and the largest request refused.
SurvivedRefusals oom_lines(const replay::ReplayTrace& trace, std::uint32_t device, std::size_t end) {
  SurvivedRefusals s;
  for (std::size_t i = 0; i < std::min(end, trace.events.size()); ++i) {
    const replay::Event& e = trace.events[i];
    if (e.device == device && e.action == replay::Action::oom) {
      ++s.count;
      s.largest = std::max(s.largest, e.bytes);
    }
  }
  return s;
}

// Note [The limit in force].
std::optional<Limit> limit_in_force(const LimitHint& hint, const OomAnalysis& a, std::int64_t replay_peak) {
  std::optional<std::uint64_t> device_capacity;
  if (a.device_free && a.recorded_reserved) {
    device_capacity =
        *a.device_free + static_cast<std::uint64_t>(std::max<std::int64_t>(*a.recorded_reserved, 0));
  }
  Limit l;
  l.device_capacity = device_capacity;
  if (hint.given) {
    l.bytes = *hint.given;
    l.source = LimitSource::given;
    l.origin = hint.given_origin;
    return l;
  }
  if (hint.recorded) {
    l.bytes = *hint.recorded;
    l.source = LimitSource::recorder;
    l.origin = hint.recorded_origin;
    return l;
  }
  if (!a.device_free || !a.recorded_reserved) {
    return std::nullopt;
  }
  const std::uint64_t segment = segment_for(a.at.request);
  const auto reserved = static_cast<std::uint64_t>(std::max<std::int64_t>(*a.recorded_reserved, 0));
  if (*a.device_free >= segment + kCapEvidence) {
    // At least what the program held before, and what the replay needed to get there (a replay is not the
    // program), but below the refusal's bound.
    const auto peak = static_cast<std::uint64_t>(
        std::max({a.recorded_peak_reserved.value_or(0), replay_peak, std::int64_t{0}}));
    l.upper = reserved + segment;
    l.bytes = std::max(reserved, std::min(peak, *l.upper - 1));
    l.source = LimitSource::inferred;
    l.origin = fmt::format(
        "inferred from the OOM: PyTorch refused {} while the device had {} free, so a limit of about {} was "
        "in "
        "force (between {} and {}), not the device's {}",
        human_bytes(a.at.request), human_bytes(*a.device_free), human_bytes(l.bytes), human_bytes(l.bytes),
        human_bytes(*l.upper), human_bytes(*device_capacity));
    return l;
  }
  l.bytes = *device_capacity;
  l.source = LimitSource::device;
  l.origin = "what PyTorch could use when it ran out (reserved + the device's free memory then)";
  return l;
}

// The settings other than the recorded one that grant the request at the limit, and the one to name.
void judge_grid(const replay::ReplayTrace& trace, std::uint64_t first,
                const std::vector<replay::SweepSetting>& grid, const replay::SweepSetting& recorded,
                const replay::ReplayOptions& base, unsigned threads, OomAnalysis& a) {
  std::vector<replay::SweepSetting> others;
  for (const replay::SweepSetting& s : grid) {
    if (!same_setting(s, recorded) && s.allocator != "direct") {
      others.push_back(s);
    }
  }
  std::vector<std::optional<std::int64_t>> granted(others.size());
  parallel_for(others.size(), threads == 0 ? default_threads(others.size()) : threads, [&](std::size_t i) {
    const replay::RecordedOom r = at_the_oom(trace, others[i], a.limit->bytes, first, base, nullptr).oom;
    if (r.probe_granted.value_or(false) && !r.earlier_replay_oom) {
      granted[i] = r.probe_reserved;
    }
  });
  for (std::size_t i = 0; i < others.size(); ++i) {
    if (granted[i]) {
      a.would_grant.push_back({others[i], *granted[i]});
    }
  }
  if (a.would_grant.empty()) {
    return;
  }
  // Those that leave kEdgeHeadroom first, then the simplest, then the most headroom.
  const auto roomy = [&](const GrantingSetting& g) {
    return static_cast<double>(static_cast<std::int64_t>(a.limit->bytes) - g.reserved) >=
           kEdgeHeadroom * static_cast<double>(a.limit->bytes);
  };
  const auto simpler = [&](const GrantingSetting& x, const GrantingSetting& y) {
    return std::tuple(!roomy(x), knobs(x.setting), x.reserved) <
           std::tuple(!roomy(y), knobs(y.setting), y.reserved);
  };
  a.named = static_cast<std::size_t>(std::min_element(a.would_grant.begin(), a.would_grant.end(), simpler) -
                                     a.would_grant.begin());
}

}  // namespace

const char* cause_name(OomCause cause) noexcept {
  switch (cause) {
    case OomCause::fragmentation:
      return "fragmentation";
    case OomCause::exhaustion:
      return "exhaustion";
    case OomCause::not_reproduced:
      return "not_reproduced";
    case OomCause::at_the_limit:
      return "at_the_limit";
  }
  return "unknown";
}

const char* limit_source_name(LimitSource source) noexcept {
  switch (source) {
    case LimitSource::given:
      return "given";
    case LimitSource::recorder:
      return "recorder";
    case LimitSource::inferred:
      return "inferred";
    case LimitSource::device:
      return "device";
  }
  return "unknown";
}

std::uint64_t segment_for(std::uint64_t bytes) noexcept {
  if (bytes <= kMiB) {
    return 2 * kMiB;
  }
  if (bytes < 10 * kMiB) {
    return 20 * kMiB;
  }
  return (bytes + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB);
}

std::optional<SurvivedRefusals> survived_refusals(const replay::ReplayTrace& trace, std::uint32_t device) {
  if (replay::fatal_oom(trace, device)) {
    return std::nullopt;
  }
  const SurvivedRefusals s = oom_lines(trace, device, trace.events.size());
  return s.count > 0 ? std::optional(s) : std::nullopt;
}

std::optional<OomAnalysis> analyse_oom(const replay::ReplayTrace& trace, const LiveWalk& walk,
                                       const SnapshotFacts& facts, const PlacementPlan& plan,
                                       const std::vector<replay::SweepSetting>& grid,
                                       const replay::SweepSetting& recorded, const LimitHint& hint,
                                       const replay::ReplayOptions& base, unsigned threads) {
  // The OOM the program died of (replay::fatal_oom); the oom lines before it are refusals it survived (Note
  // [A recorded OOM gives back the cache]), counted.
  const std::optional<std::size_t> first = replay::fatal_oom(trace, walk.device);
  if (!first) {
    return std::nullopt;
  }
  OomAnalysis a;
  a.count = oom_lines(trace, walk.device, trace.events.size()).count;
  a.survived = oom_lines(trace, walk.device, *first).count;
  const replay::Event& e = trace.events[*first];
  a.at = OomAt{event_number(walk, *first), e.seq, e.time_ns, e.bytes, -1};
  const std::string& label = trace.devices[walk.device];
  // The facts list every device's oom entries in trace order: the fatal line is this device's after the
  // survived ones.
  for (std::size_t nth = a.survived; const OomFact& f : facts.ooms) {
    if (f.device == label && nth-- == 0) {
      a.device_free = f.device_free;
      a.at.site = f.site;
      break;
    }
  }
  // The recorded allocator's reserved bytes then: a replay on a device too large to run out.
  const AtTheOom unconstrained = at_the_oom(trace, recorded, kUnconstrained, *first, base, &plan, false);
  a.recorded_reserved = unconstrained.oom.recorded_reserved;
  a.recorded_peak_reserved = unconstrained.trace_peak_reserved;
  if (hint.given && a.recorded_reserved && static_cast<std::int64_t>(*hint.given) < *a.recorded_reserved) {
    throw InputError(fmt::format(
        "{} {}: below the {} PyTorch had reserved when the program of {} ran out, so not the limit it ran "
        "under; give that limit first (the capacities after it are asked only whether the program fits "
        "them), or leave {} out to judge it against the limit the snapshot tells",
        hint.given_origin, human_bytes(*hint.given),
        human_bytes(static_cast<std::uint64_t>(*a.recorded_reserved)), trace.name, hint.given_origin));
  }
  a.limit = limit_in_force(hint, a, unconstrained.peak_reserved);
  if (!a.limit) {
    a.reserved = unconstrained.oom.reserved;
    a.allocated = unconstrained.oom.allocated;
    a.largest_free_block = unconstrained.oom.largest_free_block;
    return a;
  }
  const replay::RecordedOom own = at_the_oom(trace, recorded, a.limit->bytes, *first, base, &plan).oom;
  a.reserved = own.reserved;
  a.allocated = own.allocated;
  a.largest_free_block = own.largest_free_block;
  a.replay_failed_earlier = own.earlier_replay_oom;
  if (own.probe_granted) {
    a.reproduced = !*own.probe_granted;
  }
  // Not reproduced: the replay granted it (Note [Fragmentation or exhaustion]). One that ran out earlier than
  // the program did and refuses it too is judged, with a note.
  if (!a.reproduced.value_or(false)) {
    a.cause = OomCause::not_reproduced;
    return a;
  }
  judge_grid(trace, *first, grid, recorded, base, threads, a);
  if (a.would_grant.empty()) {
    a.cause = OomCause::exhaustion;
  } else {
    const auto left =
        static_cast<double>(static_cast<std::int64_t>(a.limit->bytes) - a.would_grant[*a.named].reserved);
    a.cause = left >= kEdgeHeadroom * static_cast<double>(a.limit->bytes) ? OomCause::fragmentation
                                                                          : OomCause::at_the_limit;
  }
  return a;
}

void decide_by_the_whole_step(OomAnalysis& a, const StepFits& fits) {
  if (!a.cause || (*a.cause != OomCause::fragmentation && *a.cause != OomCause::at_the_limit)) {
    return;
  }
  std::optional<std::size_t> best;
  bool estimate_fits = false;
  for (std::size_t i = 0; i < a.would_grant.size(); ++i) {
    const GrantingSetting& g = a.would_grant[i];
    if (fits(g.setting, true)) {
      if (!best || std::tuple(knobs(g.setting), g.reserved) <
                       std::tuple(knobs(a.would_grant[*best].setting), a.would_grant[*best].reserved)) {
        best = i;
      }
    } else if (!estimate_fits && fits(g.setting, false)) {
      estimate_fits = true;
    }
  }
  if (best) {
    a.named = best;
    a.cause = OomCause::fragmentation;
  } else {
    a.cause = estimate_fits ? OomCause::at_the_limit : OomCause::exhaustion;
  }
  a.decided_by_the_step = true;
}

}  // namespace memstress::doctor
