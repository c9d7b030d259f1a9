// The doctor's sections for people (harness/doctor/format.hpp): each a few figures and one plain
// sentence, marked "->", that says what they mean.

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "harness/core/text_table.hpp"
#include "harness/core/units.hpp"
#include "harness/doctor/format.hpp"

namespace memstress::doctor {
namespace {

std::string bytes(std::int64_t b) {
  return b < 0 ? "-" + human_bytes(static_cast<std::uint64_t>(-b))
               : human_bytes(static_cast<std::uint64_t>(b));
}

std::string seconds(std::uint64_t ns) {
  return fmt::format("{:.1f} s", static_cast<double>(ns) / 1e9);
}

std::string percent(double part, double whole) {
  return whole > 0 ? fmt::format("{:.0f}%", 100 * part / whole) : std::string("-");
}

std::string conf_name(const replay::SweepSetting& s) {
  if (s.allocator == "direct") {
    return "direct (cudaMalloc per allocation, for reference)";
  }
  const std::string conf = pytorch_conf(s);
  return conf.empty() ? "(PyTorch's defaults)" : conf;
}

std::string limit_text(const Limit& l) {
  return bytes(static_cast<std::int64_t>(l.bytes));
}

std::string where_it_ran_out(const DoctorReport& r, const OomAt& at) {
  return fmt::format("OOM at event {} ({}{})", at.event, bytes(static_cast<std::int64_t>(at.request)),
                     at.site >= 0 ? " at " + r.site_name(at.site) : std::string());
}

void header(std::string& out, const DoctorReport& r) {
  const Needed& n = r.needed;
  out += fmt::format("memstress doctor: {} ({}, {}, {} events over {})\n", r.input, r.source, r.trace_device,
                     n.events, seconds(n.duration_ns));
  if (!r.other_devices.empty()) {
    out += fmt::format("  other devices in it, not diagnosed: {} ({} to pick one)\n",
                       fmt::join(r.other_devices, ", "), r.flags.trace_device);
  }
  out += fmt::format("  ran with: {} ({})\n", conf_name(r.setting), r.setting_origin);
  std::vector<std::string> caps;
  for (const std::uint64_t c : r.capacities) {
    caps.push_back(bytes(static_cast<std::int64_t>(c)));
  }
  out += fmt::format("  capacity judged: {} ({})\n",
                     caps.empty() ? "-" : fmt::format("{}", fmt::join(caps, ", ")), r.capacity_origin);
}

void needed(std::string& out, const DoctorReport& r) {
  const Needed& n = r.needed;
  out += fmt::format("\n== What it needed ({}) ==\n", n.on);
  std::vector<TableLine> t;
  t.push_back({"peak allocated (allocated_bytes.all.peak)", bytes(n.peak_allocated)});
  t.push_back({"peak reserved (reserved_bytes.all.peak), replayed", bytes(n.peak_reserved)});
  if (n.recorded_peak_reserved) {
    t.push_back({"peak reserved, as recorded (the snapshot's segments)", bytes(*n.recorded_peak_reserved)});
  }
  t.push_back({"reserved - allocated, at the peak", bytes(n.reserved_minus_allocated)});
  t.push_back({"utilization (peak allocated / peak reserved)", fmt::format("{:.3f}", n.utilization)});
  t.push_back(
      {"external fragmentation at the peak (1 - largest free / free)",
       n.external_fragmentation ? fmt::format("{:.3f}", *n.external_fragmentation) : "- (nothing free)"});
  t.push_back(
      {"the peak (the most live at once)",
       fmt::format("event {} of {}, {} into the run", n.peak_event, n.events, seconds(n.peak_time_ns))});
  out += render_table(t);
  const auto unused = static_cast<double>(n.peak_reserved - n.peak_allocated);
  if (!r.oom) {
    out += fmt::format(
        "-> At its peak it needed {} of GPU memory from PyTorch's allocator; {} of that ({}) was "
        "reserved but not allocated.\n",
        bytes(n.peak_reserved), bytes(n.peak_reserved - n.peak_allocated),
        percent(unused, static_cast<double>(n.peak_reserved)));
    return;
  }
  // A program that ran out never reached its peak: the recording stops at the OOM, and the most it reserved
  // before it is no measure of what it needed (under a cap it ran out of, it reads as less than the cap).
  const OomAnalysis& o = *r.oom;
  const std::int64_t least = o.allocated + static_cast<std::int64_t>(o.at.request);
  const bool over = o.limit && least > static_cast<std::int64_t>(o.limit->bytes);
  out += fmt::format(
      "-> It ran out of memory, and the recording stops there, before what the rest of the step would "
      "have needed: it needed at least {}, the {} allocated when it ran out and the {} it asked for{}. Up to "
      "then it reserved at most {}, {} of it ({}) reserved but not allocated at the peak.\n",
      bytes(least), bytes(o.allocated), bytes(static_cast<std::int64_t>(o.at.request)),
      over ? fmt::format(", more than the {} it could use", limit_text(*o.limit)) : std::string(),
      bytes(n.peak_reserved), bytes(n.peak_reserved - n.peak_allocated),
      percent(unused, static_cast<double>(n.peak_reserved)));
}

void at_peak(std::string& out, const DoctorReport& r) {
  out += fmt::format("\n== Who holds the memory at the peak (event {}) ==\n", r.needed.peak_event);
  if (!r.frames_recorded) {
    out +=
        "no stack frames recorded: record them with\n"
        "  torch.cuda.memory._record_memory_history(max_entries=1_000_000, stacks=\"python\")\n"
        "  (or run under python/memstress_torch.py, which does)\n";
  }
  std::vector<TableLine> t{{"SITE", "LIVE", "SHARE", "COUNT", "LARGEST"}};
  for (const SiteShare& s : r.sites_at_peak) {
    t.push_back({r.site_name(s.site), bytes(static_cast<std::int64_t>(s.bytes)),
                 percent(static_cast<double>(s.bytes), static_cast<double>(r.live_at_peak)),
                 std::to_string(s.count), bytes(static_cast<std::int64_t>(s.largest))});
  }
  out += render_table(t);
  const auto top = std::find_if(r.sites_at_peak.begin(), r.sites_at_peak.end(),
                                [](const SiteShare& s) { return s.site >= 0; });
  if (top != r.sites_at_peak.end()) {
    out += fmt::format(
        "-> {} holds the most of the sites recorded: {} of the {} live at the peak ({}, allocations: "
        "{}).\n",
        r.site_name(top->site), bytes(static_cast<std::int64_t>(top->bytes)), bytes(r.live_at_peak),
        percent(static_cast<double>(top->bytes), static_cast<double>(r.live_at_peak)), top->count);
  }
}

constexpr std::string_view kShrinkActivations =
    "In training, activation checkpointing (torch.utils.checkpoint) shrinks activations; mixed precision "
    "(torch.autocast, bf16) shrinks them and caches alike.";
constexpr std::string_view kShrinkKept =
    "a smaller model, optimizer state kept off the GPU, or more GPUs (sharding) help more than "
    "checkpointing.";

// The advice for an OOM no setting avoids: what does help.
void exhaustion_advice(std::string& out, const DoctorReport& r, const OomAnalysis& o) {
  const std::uint64_t limit = o.limit->bytes;
  out += fmt::format(
      "-> Exhaustion: the live allocations ({}) and the request ({}) need more than the {} the process "
      "could use, and no allocator setting of the sweep grants the request there (each replayed to that "
      "point). No PYTORCH_CUDA_ALLOC_CONF helps.\n",
      bytes(o.allocated), bytes(static_cast<std::int64_t>(o.at.request)),
      bytes(static_cast<std::int64_t>(limit)));
  const std::optional<std::uint64_t> batch = r.recorded_batch;
  if (const std::optional<BatchAdvice>& b = r.batch_advice; b && b->safe > 0 && b->top) {
    // An inferred limit is a range (Note [The limit in force]): the batch at either end of it.
    out += fmt::format(
        "-> Lower the batch to {}: the largest batch sure to fit {}, the least the inferred limit can be, "
        "from "
        "the two batch runs (predict-batch's range there: {}..{}). Under a limit of {}, the most it can be, "
        "the "
        "range is {}..{}. Give the cap it ran under with {} for one answer.\n",
        b->safe, limit_text(*o.limit), b->safe, b->estimate, bytes(static_cast<std::int64_t>(b->top->limit)),
        b->top->safe, b->top->estimate, r.flags.capacity);
  } else if (b && b->safe > 0) {
    out += fmt::format(
        "-> Lower the batch to {}: the largest batch sure to fit the limit, from the two batch runs "
        "(predict-batch's range: {}..{}).\n",
        b->safe, b->safe, b->estimate);
  } else if (b) {
    out += "-> Even the smaller batch run does not fit the limit: lower the batch below it.\n";
  } else if (batch && *batch >= 2) {
    out += fmt::format(
        "-> Lower the batch: it ran out at batch {}. For the largest batch that fits, record the same step "
        "at "
        "about half of it and run\n     memstress predict-batch {} SMALLER.pickle {} {},{} {} {}\n",
        *batch, r.input, r.flags.batch, *batch, *batch / 2, r.flags.capacity, format_bytes(limit));
  } else {
    out += fmt::format(
        "-> Lower the batch. For the largest batch that fits, record the step at two batch sizes "
        "(python -m memstress_torch --batch N) "  // another program's command line
        "and run memstress predict-batch A B {} N,M {} {}\n",
        r.flags.batch, r.flags.capacity, format_bytes(limit));
  }
  if (const std::optional<BatchAdvice>& b = r.batch_advice; b && b->batch > 0 && b->peak_live > 0) {
    // Note [What grows with the batch] (doctor.cpp).
    const std::int64_t kept = b->peak_live - b->grows_with_batch;
    out += 2 * b->grows_with_batch >= b->peak_live
               ? fmt::format(
                     "-> {} of the {} a step at batch {} holds at its peak ({}) grows with the batch, by "
                     "the two batch runs: activations, caches and workspaces. {}\n",
                     bytes(b->grows_with_batch), bytes(b->peak_live), b->batch,
                     percent(static_cast<double>(b->grows_with_batch), static_cast<double>(b->peak_live)),
                     kShrinkActivations)
               : fmt::format(
                     "-> Most of the {} a step at batch {} holds at its peak does not grow with the batch, "
                     "by the two batch runs ({}: weights, gradients, optimizer state): {}\n",
                     bytes(b->peak_live), b->batch, bytes(kept), kShrinkKept);
  } else if (o.floor && o.live > 0) {
    const std::int64_t step = o.live - *o.floor;
    out +=
        2 * step >= o.live
            ? fmt::format(
                  "-> {} of the {} live at the OOM ({}) was made by the step itself, above the {} kept "
                  "between steps (weights, gradients, optimizer state): activations. {}\n",
                  bytes(step), bytes(o.live), percent(static_cast<double>(step), static_cast<double>(o.live)),
                  bytes(*o.floor), kShrinkActivations)
            : fmt::format(
                  "-> Most of the {} live at the OOM is kept between steps ({}: weights, gradients, "
                  "optimizer state): {}\n",
                  bytes(o.live), bytes(*o.floor), kShrinkKept);
  }
  if (!o.sites.empty()) {
    std::vector<std::string> names;
    for (const SiteShare& s : o.sites) {
      if (s.site != kOtherSites) {
        names.push_back(
            fmt::format("{} ({})", r.site_name(s.site), bytes(static_cast<std::int64_t>(s.bytes))));
      }
    }
    out += fmt::format("-> The sites that held the most at the OOM, to shrink first: {}.\n",
                       fmt::join(names, "; "));
  }
}

void oom(std::string& out, const DoctorReport& r) {
  out += "\n== The OOM ==\n";
  if (!r.oom && r.refusals) {
    const std::string largest = bytes(static_cast<std::int64_t>(r.refusals->largest));
    const std::string refused = r.refusals->count == 1
                                    ? fmt::format("one request, of {},", largest)
                                    : fmt::format("{} requests (the largest {})", r.refusals->count, largest);
    const std::string limit =
        r.own_capacity ? " (" + bytes(static_cast<std::int64_t>(*r.own_capacity)) + ")" : std::string();
    out += fmt::format("-> The program did not run out of memory, but PyTorch refused it {} and it went on: ",
                       refused);
    out += "a library asked for a workspace and settled for less, as cuDNN does. ";
    out += fmt::format("It ran at the edge of its limit{}: a larger batch is likely to run out, ", limit);
    out += "and these steps may have run slower algorithms.\n";
    return;
  }
  if (!r.oom) {
    out += "-> The program did not run out of memory while it was recorded.\n";
    return;
  }
  const OomAnalysis& o = *r.oom;
  std::vector<TableLine> t;
  t.push_back(
      {"request", fmt::format("{} at event {}{}", bytes(static_cast<std::int64_t>(o.at.request)), o.at.event,
                              o.at.site >= 0 ? " (" + r.site_name(o.at.site) + ")" : std::string())});
  if (o.recorded_reserved) {
    t.push_back({"reserved then (recorded)", bytes(*o.recorded_reserved)});
  }
  t.push_back({"reserved then (replayed)", bytes(o.reserved)});
  t.push_back({"allocated then (replayed)", bytes(o.allocated)});
  t.push_back({"largest free block in the cache",
               o.largest_free_block ? bytes(*o.largest_free_block) : std::string("-")});
  if (o.device_free) {
    t.push_back({"free on the device (cudaMemGetInfo)", bytes(static_cast<std::int64_t>(*o.device_free))});
  }
  if (o.limit) {
    t.push_back(
        {"limit in force", fmt::format("{} ({})", limit_text(*o.limit), limit_source_name(o.limit->source))});
  }
  if (o.count > 1) {
    t.push_back({"OOMs in the recording", std::to_string(o.count)});
  }
  if (o.survived > 0) {
    // Note [A recorded OOM gives back the cache]: a library asked, was refused and went on with less.
    t.push_back({"of them, refusals it went on after", std::to_string(o.survived)});
  }
  out += render_table(t);
  if (!o.cause) {
    out += fmt::format("-> Without the limit the process ran under (give {}) the cause cannot be judged.\n",
                       r.flags.capacity);
    return;
  }
  if (o.limit->source == LimitSource::inferred) {
    std::string origin = o.limit->origin;
    origin[0] = 'I';  // "inferred from the OOM: ..."
    out += fmt::format(
        "-> {}. It is judged at {}, the least it can have been ({} {}); where you know the cap it ran under, "
        "give that instead: {} CAP.\n",
        origin, limit_text(*o.limit), r.flags.capacity, format_bytes(o.limit->bytes), r.flags.capacity);
  }
  if (o.replay_failed_earlier) {
    out +=
        "note: the replay under the same setting had already run out before this point (a replay is not the "
        "program): the figures are the replay's, after that.\n";
  }
  const std::uint64_t limit = o.limit->bytes;
  if (*o.cause == OomCause::not_reproduced) {
    out += fmt::format(
        "-> Not reproduced: replayed under the setting it ran with, at the {} limit ({}), the request was "
        "granted. Something the snapshot does not show made the difference: a smaller limit (give the real "
        "one with {}), memory taken outside PyTorch's allocator (another library, NCCL, another process), or "
        "allocations made before the recording began. No setting is recommended.\n",
        bytes(static_cast<std::int64_t>(limit)), o.limit->origin, r.flags.capacity);
    return;
  }
  if (*o.cause == OomCause::exhaustion) {
    if (o.decided_by_the_step && !o.would_grant.empty()) {
      out += fmt::format(
          "-> {} of the sweep's settings grant this request, but the whole step at this batch, replayed from "
          "the "
          "two batch runs, does not fit the limit under any of them.\n",
          o.would_grant.size());
    }
    exhaustion_advice(out, r, o);
    return;
  }
  const GrantingSetting& named = o.would_grant[*o.named];
  if (*o.cause == OomCause::at_the_limit) {
    out += fmt::format(
        "-> At the limit: PYTORCH_CUDA_ALLOC_CONF={} grants this request, but leaves only {} of the {} "
        "limit; "
        "what the rest of the step asks for is not in this snapshot, and on PyTorch's own runs a grant this "
        "tight "
        "usually still ran out later in the step. Not judged: {}. Lower the batch to be sure.\n",
        pytorch_conf(named.setting), bytes(static_cast<std::int64_t>(limit) - named.reserved),
        bytes(static_cast<std::int64_t>(limit)),
        o.decided_by_the_step
            ? std::string("the step replayed from the two batch runs fits by the estimate only, not surely")
            : fmt::format("to decide, give two complete runs at smaller batches ({} A,B {} a,b)",
                          r.flags.batch_runs, r.flags.batch));
    return;
  }
  const std::int64_t free_total = static_cast<std::int64_t>(limit) - o.allocated;
  out += fmt::format(
      "-> Fragmentation: {} was free under the {} limit, more than the {} asked for, but in no piece the "
      "setting it ran with could use (the largest free block in the cache was {}).\n",
      bytes(free_total), bytes(static_cast<std::int64_t>(limit)),
      bytes(static_cast<std::int64_t>(o.at.request)),
      o.largest_free_block ? bytes(*o.largest_free_block) : std::string("unknown"));
  out += fmt::format(
      "-> Use PYTORCH_CUDA_ALLOC_CONF={}: replayed to that point at the same limit it grants the request, "
      "with {} reserved, {} of headroom left ({} of the sweep's settings grant it){}.\n",
      pytorch_conf(named.setting), bytes(named.reserved),
      bytes(static_cast<std::int64_t>(limit) - named.reserved), o.would_grant.size(),
      o.decided_by_the_step
          ? "; the whole step at this batch, replayed from the two batch runs, fits under it"
          : "");
}

// With an OOM the recommendation is the OOM's: only a setting whose replay granted the request.
Recommendation after_an_oom(const OomAnalysis& o) {
  if (*o.cause == OomCause::fragmentation) {
    const replay::SweepSetting& named = o.would_grant[*o.named].setting;
    return {named,
            fmt::format("Recommended: PYTORCH_CUDA_ALLOC_CONF={} (it grants the OOM's request; see The OOM).",
                        pytorch_conf(named))};
  }
  if (*o.cause == OomCause::exhaustion) {
    return {std::nullopt, fmt::format("No setting is recommended: none avoids the OOM at the {} limit.",
                                      bytes(static_cast<std::int64_t>(o.limit->bytes)))};
  }
  if (*o.cause == OomCause::at_the_limit) {
    return {std::nullopt, "No setting is recommended: none is sure to avoid the OOM (see The OOM)."};
  }
  return {std::nullopt, "No setting is recommended: the OOM was not reproduced (see The OOM)."};
}

void settings(std::string& out, const DoctorReport& r) {
  const SettingsAnswer& a = r.settings;
  out += fmt::format("\n== Settings ({} replays, each on a fresh simulated device) ==\n", a.rows.size());
  TableLine head{"RANK", "PYTORCH_CUDA_ALLOC_CONF", "PEAK RESERVED", "UTILIZATION"};
  for (const std::uint64_t c : r.capacities) {
    head.push_back(fmt::format("AT {}", bytes(static_cast<std::int64_t>(c))));
  }
  // Settings with the same figures are one line (the JSON document lists each); the setting it ran with
  // and direct always have their own. A recording that ends in an OOM fits a capacity only as far as it goes.
  const std::string fits = r.oom ? "fits to the OOM" : "fits";
  const auto figures = [&](const SettingRow& row) {
    TableLine f{bytes(row.peak_reserved), fmt::format("{:.3f}", row.utilization)};
    for (const CapacityVerdict& v : row.verdicts) {
      f.push_back(v.fits ? fits : v.oom ? where_it_ran_out(r, *v.oom) : std::string("OOM"));
    }
    return f;
  };
  const auto own_line = [&](std::size_t i) {
    return a.recorded == i || a.rows[i].setting.allocator == "direct";
  };
  std::vector<TableLine> t{head};
  for (std::size_t i = 0; i < a.rows.size();) {
    const TableLine f = figures(a.rows[i]);
    std::size_t j = i + 1;
    while (!own_line(i) && j < a.rows.size() && !own_line(j) && figures(a.rows[j]) == f) {
      ++j;
    }
    std::string name = conf_name(a.rows[i].setting);
    if (a.recorded == i) {
      name += "  <- ran with";
    }
    if (j - i > 1) {
      name += fmt::format("  (and {} more alike)", j - i - 1);
    }
    TableLine line{j - i > 1 ? fmt::format("{}-{}", i + 1, j) : std::to_string(i + 1), name};
    line.insert(line.end(), f.begin(), f.end());
    t.push_back(std::move(line));
    i = j;
  }
  out += render_table(t);
  // A setting can fit a limit below its peak: say why, where one does.
  const bool below_its_peak = std::any_of(a.rows.begin(), a.rows.end(), [](const SettingRow& row) {
    return std::any_of(row.verdicts.begin(), row.verdicts.end(), [&](const CapacityVerdict& v) {
      return v.fits && static_cast<std::uint64_t>(std::max<std::int64_t>(row.peak_reserved, 0)) > v.capacity;
    });
  });
  if (below_its_peak) {
    out +=
        "   (PEAK RESERVED is replayed with no limit, where the cache is never emptied; under a limit the "
        "allocator frees its cached blocks and retries before it runs out, as PyTorch's does, so a setting "
        "can "
        "fit a limit below that peak.)\n";
  }
  const bool fits_somewhere = std::any_of(a.rows.begin(), a.rows.end(), [](const SettingRow& row) {
    return std::any_of(row.verdicts.begin(), row.verdicts.end(),
                       [](const CapacityVerdict& v) { return v.fits; });
  });
  if (r.oom && fits_somewhere) {
    out +=
        "   (The recording stops at the OOM: \"fits to the OOM\" says that what was recorded, up to the "
        "request "
        "that ran out, fits there; what the rest of the step needs is not in it.)\n";
  }
  if (r.oom && r.oom->cause) {
    out += fmt::format("-> {}\n", recommendation(r).sentence);
    return;
  }
  if (!a.recommended) {
    return;
  }
  out += fmt::format("-> {}\n", recommendation(r).sentence);
  const auto direct = std::find_if(a.rows.begin(), a.rows.end(),
                                   [](const SettingRow& row) { return row.setting.allocator == "direct"; });
  if (direct != a.rows.end()) {
    out += fmt::format(
        "   (direct, a cudaMalloc and cudaFree per allocation and no cache, needs {}: the floor "
        "for any caching allocator, at the cost of a driver call per allocation.)\n",
        bytes(direct->peak_reserved));
  }
}

void growth(std::string& out, const DoctorReport& r) {
  const GrowthAnswer& g = r.growth;
  out += "\n== Growth ==\n";
  // Note [Steps are what repeats] (growth.hpp): judged only of a loop of steps, or of repeats that give back
  // most of what they take in a recording that ends in no OOM.
  if (!g.judged()) {
    out +=
        g.steps == StepsVerdict::no_repeat
            ? fmt::format(
                  "-> Not judged: no loop of five or more alike steps (the same requests, in the same "
                  "order and of the same sizes, every step) covers half of these {} allocations and "
                  "frees. Dips inside a step, between a forward pass's layers, are not steps. To judge "
                  "growth, record the loop for five or more whole steps at one batch shape.\n",
                  g.requests)
            : fmt::format(
                  "-> Not judged: the requests repeat every {} allocations and frees, but each repeat "
                  "keeps {} of its {} rise (at the median), more than a step that gives back what it "
                  "takes{}: either the layers of one pass, which its backward pass frees, or a leak of "
                  "that much a step (outputs kept with their graph, a loss summed without .item()). "
                  "Record whole steps, each through its backward pass and optimizer step, to tell.\n",
                  g.step_requests, bytes(static_cast<std::int64_t>(g.kept_per_step)),
                  bytes(static_cast<std::int64_t>(g.rise_per_step)),
                  g.ends_at_oom ? ", and the recording ends in an OOM, perhaps inside the pass that ran out"
                                : ", most of it");
    return;
  }
  const std::int64_t change = g.floors.back().bytes - g.floors.front().bytes;
  out += fmt::format(
      "floors between steps: {}, a step every {} allocations and frees; from {} to {} ({}{}); slope {}/step "
      "(Theil-Sen, R^2 {:.2f}); higher than the step before in {} of {} steps\n",
      g.floors.size(), g.step_requests, bytes(g.floors.front().bytes), bytes(g.floors.back().bytes),
      change < 0 ? "-" : "+", bytes(std::abs(change)), bytes(static_cast<std::int64_t>(g.fit.slope)),
      g.fit.r2, g.fit.rises, g.floors.size() - 1);
  if (g.falls_back) {
    out += fmt::format(
        "-> No growth over the recording: a step keeps {} (at the median), but the floors fall back between "
        "runs "
        "of steps, {}/step over all of them: the layers of passes that end, not steps that keep.\n",
        bytes(static_cast<std::int64_t>(g.kept_per_step)), bytes(static_cast<std::int64_t>(g.fit.slope)));
    return;
  }
  if (!g.grows()) {
    out += "-> No growth: the memory kept between steps does not rise from step to step.\n";
    return;
  }
  out += fmt::format(
      "-> Memory grows: about {} more is kept after every step ({}/s); at this rate {} more after "
      "another 10,000 steps.\n",
      bytes(static_cast<std::int64_t>(g.fit.slope)), bytes(static_cast<std::int64_t>(g.bytes_per_second)),
      bytes(static_cast<std::int64_t>(g.fit.slope * 10000)));
  if (g.steps == StepsVerdict::keeps_much) {
    out += fmt::format(
        "   Each step keeps {} of the {} it takes (at the median) and gives back the rest, and the recording "
        "ends in no OOM: a leak (outputs or losses kept with their graph or on the GPU), or memory kept on "
        "purpose (a cache that fills, results gathered on the GPU).\n",
        bytes(static_cast<std::int64_t>(g.kept_per_step)), bytes(static_cast<std::int64_t>(g.rise_per_step)));
  }
  if (g.ends_in_the_loop) {
    out +=
        "   The recording ends inside the repeats: were they the layers of one pass that ran out of memory "
        "rather than steps, this would be no leak. A recording past the loop's end tells (the memstress "
        "recorder writes again at exit).\n";
  }
  if (g.sites.empty()) {
    out += r.frames_recorded ? "   no single site's live bytes grow step after step.\n"
                             : "   record stack frames to see which line keeps the memory.\n";
    return;
  }
  std::vector<TableLine> t{{"SITE THAT GROWS", "PER STEP", "GROWN OVER THE RUN", "AT THE LAST FLOOR"}};
  for (std::size_t i = 0; i < std::min<std::size_t>(g.sites.size(), 10); ++i) {
    const SiteGrowth& s = g.sites[i];
    t.push_back({r.site_name(s.site), bytes(static_cast<std::int64_t>(s.fit.slope)), bytes(s.last - s.first),
                 bytes(s.last)});
  }
  out += render_table(t);
}

// `--allocator`: the other allocators, each replayed once (Note [Other allocators in the doctor]).
void peers(std::string& out, const DoctorReport& r) {
  if (r.peers.empty()) {
    return;
  }
  out += fmt::format("\n== Other allocators ({}: each replayed once; judged by peak reserved alone) ==\n",
                     r.flags.allocator);
  TableLine head{"ALLOCATOR", "REPLAYED ON", "PEAK RESERVED", "UTILIZATION"};
  for (const std::uint64_t c : r.capacities) {
    head.push_back(fmt::format("AT {}", bytes(static_cast<std::int64_t>(c))));
  }
  std::vector<TableLine> t{head};
  std::vector<const PeerRow*> skipped;
  for (const PeerRow& row : r.peers) {
    if (!row.skipped.empty()) {
      skipped.push_back(&row);
      continue;
    }
    TableLine line{row.allocator, row.device, bytes(row.peak_reserved),
                   fmt::format("{:.3f}", row.utilization)};
    for (const CapacityVerdict& v : row.verdicts) {
      line.push_back(!v.judged      ? std::string("not judged")
                     : v.fits       ? std::string(r.oom ? "fits to the OOM" : "fits")
                     : row.ooms > 0 ? std::string("OOM")
                                    : std::string("needs more"));
    }
    t.push_back(std::move(line));
  }
  if (t.size() > 1) {
    out += render_table(t);
  }
  for (const PeerRow* row : skipped) {
    out += fmt::format("{}: skipped: {}\n", row->allocator, row->skipped);
  }
}

}  // namespace

Recommendation recommendation(const DoctorReport& r) {
  if (r.oom && r.oom->cause) {
    return after_an_oom(*r.oom);
  }
  const SettingsAnswer& a = r.settings;
  if (!a.recommended) {
    return {std::nullopt, "No setting is recommended: no setting of the sweep was judged."};
  }
  const SettingRow& best = a.rows[*a.recommended];
  if (a.recorded && a.rows[*a.recorded].peak_reserved <= best.peak_reserved) {
    return {std::nullopt,
            fmt::format("The setting it ran with already has the lowest peak of the sweep's caching "
                        "settings ({}): no setting needs less.",
                        bytes(best.peak_reserved))};
  }
  const std::string conf = pytorch_conf(best.setting);
  std::string versus;
  if (a.recorded && *a.recorded != *a.recommended) {
    const SettingRow& ran = a.rows[*a.recorded];
    versus = fmt::format(", {} less than the {} of the setting it ran with",
                         percent(static_cast<double>(ran.peak_reserved - best.peak_reserved),
                                 static_cast<double>(ran.peak_reserved)),
                         bytes(ran.peak_reserved));
  }
  return {
      best.setting,
      fmt::format(
          "Recommended: PYTORCH_CUDA_ALLOC_CONF={} (peak reserved {}{}){}.",
          conf.empty() ? "\"\" (PyTorch's defaults)" : conf, bytes(best.peak_reserved), versus,
          !r.capacities.empty() && !a.recommended_fits_all ? "; it still does not fit every capacity" : "")};
}

std::vector<Advice> advice_of(const std::string& text) {
  std::vector<Advice> advice;
  std::string section;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    end = end == std::string::npos ? text.size() : end;
    const std::string_view line(text.data() + start, end - start);
    start = end + 1;
    if (line.starts_with("== ") && line.ends_with(" ==")) {
      section = std::string(line.substr(3, line.size() - 6));
    } else if (line.starts_with("-> ")) {
      advice.push_back({section, std::string(line.substr(3))});
    } else if (line.starts_with("     ") && !advice.empty()) {  // a command the sentence above gives
      advice.back().text += "\n" + std::string(line.substr(5));
    }
  }
  return advice;
}

std::string format_doctor(const DoctorReport& report) {
  std::string out;
  header(out, report);
  needed(out, report);
  at_peak(out, report);
  oom(out, report);
  settings(out, report);
  peers(out, report);
  growth(out, report);
  return out;
}

}  // namespace memstress::doctor
