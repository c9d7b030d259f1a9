#include "harness/burn/interval_row.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>

namespace memstress {
namespace {

MetricResult metric(std::string name, std::string unit, Better better, std::vector<double> samples) {
  MetricResult m;
  m.name = std::move(name);
  m.unit = std::move(unit);
  m.better = better;
  m.summary = summarize(samples);
  m.samples = std::move(samples);
  return m;
}

double figure(const GpuHealth& h, std::string_view name, double fallback = 0) {
  const auto it =
      std::find_if(h.figures.begin(), h.figures.end(), [&](const auto& f) { return f.first == name; });
  return it == h.figures.end() ? fallback : it->second;
}

bool has_figure(const GpuHealth& h, std::string_view name) {
  return std::any_of(h.figures.begin(), h.figures.end(), [&](const auto& f) { return f.first == name; });
}

// A telemetry figure's samples as a metric; where none of the samples has it, a kNotMeasured note.
void series(Row& row, const IntervalInputs& in, const std::string& name, const std::string& unit,
            Better better, const std::function<std::optional<double>(const TelemetrySample&)>& get) {
  std::vector<double> values;
  for (const TimedSample& s : in.samples) {
    if (const std::optional<double> v = get(s.sample)) {
      values.push_back(*v);
    }
  }
  if (values.empty()) {
    row.notes.push_back(not_measured_note(name, in.telemetry_unavailable.empty()
                                                    ? std::string("NVML does not give it on this GPU")
                                                    : in.telemetry_unavailable));
    return;
  }
  row.metrics.push_back(metric(name, unit, better, std::move(values)));
}

std::string hashes(const std::vector<std::uint64_t>& list) {
  std::string out;
  for (const std::uint64_t h : list) {
    out += fmt::format("{}{:#018x}", out.empty() ? "" : ",", h);
  }
  return out;
}

void telemetry(Row& row, const IntervalInputs& in) {
  series(row, in, "power.W", "W", Better::none, [](const TelemetrySample& s) { return s.power_w; });
  series(row, in, "power.share", "share", Better::none,
         [](const TelemetrySample& s) -> std::optional<double> {
           if (!s.power_w || !s.power_limit_w || *s.power_limit_w <= 0) {
             return std::nullopt;
           }
           return *s.power_w / *s.power_limit_w;
         });
  series(row, in, "temp.gpu.C", "C", Better::lower, [](const TelemetrySample& s) { return s.gpu_temp_c; });
  series(row, in, "temp.hbm.C", "C", Better::lower, [](const TelemetrySample& s) { return s.hbm_temp_c; });
  series(row, in, "clock.sm.MHz", "MHz", Better::none,
         [](const TelemetrySample& s) { return s.sm_clock_mhz; });
  series(row, in, "clock.mem.MHz", "MHz", Better::none,
         [](const TelemetrySample& s) { return s.mem_clock_mhz; });
  // Clock event reasons: how many samples saw a reason the profile does not allow, and which.
  std::uint64_t seen = 0;
  std::uint64_t disallowed = 0;
  double slowed = 0;
  double read = 0;
  for (const TimedSample& s : in.samples) {
    if (s.sample.reasons) {
      read += 1;
      seen |= *s.sample.reasons;
      const std::uint64_t bad = *s.sample.reasons & ~in.allowed_clock_reasons;
      disallowed |= bad;
      slowed += bad != 0 ? 1 : 0;
    }
    for (const std::string& e : s.sample.errors) {
      note_error(row.notes, fmt::format("telemetry: {}", e));
    }
  }
  if (read > 0) {
    row.metrics.push_back(metric("clocks.slowed.samples", "count", Better::lower, {slowed}));
    row.notes.push_back(fmt::format("clocks.reasons: {}", clock_reason_names(seen)));
    if (disallowed != 0) {
      row.notes.push_back(fmt::format("clocks.slowed.samples: {} in {:g} of {:g} samples",
                                      clock_reason_names(disallowed), slowed, read));
    }
  }
  const auto first =
      std::find_if(in.samples.begin(), in.samples.end(), [](const auto& s) { return s.sample.pcie_replays; });
  const auto last = std::find_if(in.samples.rbegin(), in.samples.rend(),
                                 [](const auto& s) { return s.sample.pcie_replays; });
  if (first != in.samples.end()) {
    row.metrics.push_back(
        metric("pcie.replays", "count", Better::lower,
               {static_cast<double>(*last->sample.pcie_replays - *first->sample.pcie_replays)}));
  }
}

// The health figures a burn judges, as their change since the burn began (counters since the driver loaded)
// or as they are (counted since the watch began, or a state).
void health(Row& row, const IntervalInputs& in) {
  const auto change = [&](const char* name, const char* as) {
    if (has_figure(in.health_now, name)) {
      const double v =
          figure(in.health_now, name) - figure(in.health_start, name, figure(in.health_now, name));
      row.metrics.push_back(metric(as, "count", Better::lower, {std::max(v, 0.0)}));
    }
  };
  const auto state = [&](const char* name, const char* as, double extra = 0) {
    if (has_figure(in.health_now, name) || extra > 0) {
      row.metrics.push_back(metric(as, "count", Better::lower, {figure(in.health_now, name) + extra}));
    }
  };
  if (in.health_read) {
    change("ecc.volatile.uncorrected", "ecc.uncorrected.new");
    change("ecc.volatile.corrected", "ecc.corrected.new");
    change("remapped_rows.uncorrectable", "remapped_rows.uncorrectable.new");
    change("retired_pages.double_bit", "retired_pages.double_bit.new");
    state("remapped_rows.pending", "remapped_rows.pending");
    state("remapped_rows.failed", "remapped_rows.failed");
    state("nvlink.errors", "nvlink.errors");
    state("processes.others", "processes.others");
    for (const std::string& note : in.health_now.notes) {
      row.notes.push_back(note);
    }
    for (const std::string& e : in.health_now.errors) {
      row.notes.push_back(fmt::format("health: {}", e));
    }
  }
  state("xid.events", "xid.events", in.planted_xids);
  if (!in.health_read && in.planted_xids == 0) {
    row.notes.push_back(not_measured_note("xid.events", "no health watch on the simulated device"));
  }
  for (const std::string& note : in.planted_notes) {
    row.notes.push_back(note);
  }
}

}  // namespace

Row interval_row(const IntervalInputs& in) {
  Row row;
  row.workload = std::string(kBurnWorkload);
  row.params = {{"interval", std::to_string(in.index)}};
  row.allocator = "caching";
  row.started_at = utc_now_iso8601();
  row.seconds = in.seconds;
  const double s = std::max(in.seconds, 1e-9);
  const BurnWork& w = in.work;
  row.metrics.push_back(metric("memory.GB/s", "GB/s", Better::higher, {w.memory_bytes / s / 1e9}));
  row.metrics.push_back(metric("h2d.GB/s", "GB/s", Better::higher, {w.h2d_bytes / s / 1e9}));
  row.metrics.push_back(metric("d2h.GB/s", "GB/s", Better::higher, {w.d2h_bytes / s / 1e9}));
  // The GEMMs' rates over their own time (engine.hpp); a GEMM that did not run gives no rate (NaN: judged
  // missing).
  const auto rate = [](double flop, double seconds) {
    return seconds > 0 ? flop / seconds / 1e12 : std::numeric_limits<double>::quiet_NaN();
  };
  row.metrics.push_back(
      metric("gemm.bf16.TFLOP/s", "TFLOP/s", Better::higher, {rate(w.bf16_flop, w.bf16_seconds)}));
  row.metrics.push_back(
      metric("gemm.fp64.TFLOP/s", "TFLOP/s", Better::higher, {rate(w.fp64_flop, w.fp64_seconds)}));
  row.metrics.push_back(metric("steps", "count", Better::none, {static_cast<double>(w.steps)}));
  row.metrics.push_back(metric("at.s", "s", Better::none, {in.began_s}));
  row.checked = w.checked;
  row.errors = w.errors;
  if (w.errors > 0) {
    row.verdict = Verdict::fail;
    row.reason =
        fmt::format("{} data error(s): {}", w.errors, w.error_notes.empty() ? "" : w.error_notes.front());
  }
  for (const std::string& note : w.error_notes) {
    row.notes.push_back(fmt::format("verification.errors: {}", note));
  }
  telemetry(row, in);
  health(row, in);
  if (!w.bf16_hashes.empty()) {
    row.notes.push_back(fmt::format("{}{}", kBf16HashNote, hashes(w.bf16_hashes)));
  }
  if (!w.fp64_hashes.empty()) {
    row.notes.push_back(fmt::format("{}{}", kFp64HashNote, hashes(w.fp64_hashes)));
  }
  row.notes.push_back(fmt::format("{}{}", kGemmLibraryNote, in.gemm_library));
  return row;
}

}  // namespace memstress
