#include "harness/replay/report.hpp"

#include <fmt/format.h>

#include "harness/core/text_table.hpp"
#include "harness/core/units.hpp"
#include "harness/core/version.hpp"

namespace memstress::replay {
namespace {

std::string bytes_cell(std::int64_t bytes) {
  return fmt::format("{} ({})", bytes,
                     human_bytes(static_cast<std::uint64_t>(std::max<std::int64_t>(bytes, 0))));
}

// A request's size is a count of bytes: shown unsigned, whatever its size (2^64 - 1 is not "-1").
std::string bytes_cell(std::uint64_t bytes) {
  return fmt::format("{} ({})", bytes, human_bytes(bytes));
}

nlohmann::json oom_json(const OomPoint& p) {
  return {
      {"event_index", p.event_index},
      {"seq", p.seq},
      {"time_ns", p.time_ns},
      {"request_bytes", p.request_bytes},
      {"stream", p.stream},
      {"largest_free_block_bytes", p.largest_free_block ? nlohmann::json(*p.largest_free_block) : nullptr},
      {"reserved_bytes", p.reserved},
      {"allocated_bytes", p.allocated},
      {"message", p.message}};
}

// The timeline as columns and rows of numbers (about 2000 points: half the size of one object per point).
nlohmann::json timeline_json(const ReplayResult& r) {
  nlohmann::json points = nlohmann::json::array();
  for (const TimelinePoint& p : r.timeline) {
    points.push_back({p.event_index, p.time_ns, p.allocated, p.reserved});
  }
  return {{"columns", {"event_index", "time_ns", "allocated_bytes", "reserved_bytes"}}, {"points", points}};
}

}  // namespace

nlohmann::json replay_json(const ReplayRun& run) {
  const ReplayResult& r = run.result;
  const ReplayCounts& c = r.counts;
  nlohmann::json ooms = nlohmann::json::array();
  for (const OomPoint& p : r.ooms) {
    ooms.push_back(oom_json(p));
  }
  return {
      {"allocator", r.allocator},
      {"alloc_conf", run.alloc_conf},
      {"device", r.device_label},
      {"capacity_bytes", r.capacity},
      {"pending_frees", to_string(r.pending_frees)},
      {"peaks",
       {{"allocated_bytes", r.peak_allocated},
        {"reserved_bytes", r.peak_reserved},
        {"active_bytes", r.peak_active},
        {"requested_bytes", r.peak_requested}}},
      {"trace_peak_reserved_bytes", r.trace_peak_reserved ? nlohmann::json(*r.trace_peak_reserved) : nullptr},
      {"oom_margin_bytes", static_cast<std::int64_t>(r.capacity) - r.peak_reserved},
      {"num_alloc_retries", r.num_alloc_retries},
      {"num_ooms", r.num_ooms},
      {"fragmentation",
       {{"reserved_minus_allocated_bytes", r.fragmentation.reserved_minus_allocated},
        {"utilization", r.fragmentation.utilization},
        {"external", r.fragmentation.external ? nlohmann::json(*r.fragmentation.external) : nullptr}}},
      {"counts",
       {{"events", c.events},
        {"allocs", c.allocs},
        {"frees", c.frees},
        {"frees_pending", c.frees_pending},
        {"unknown_frees", c.unknown_frees},
        {"frees_of_failed", c.frees_of_failed},
        {"trace_ooms", c.trace_ooms},
        {"segment_events", c.segment_events},
        {"other_device_events", c.other_device_events},
        {"live_at_end", c.live_at_end}}},
      {"ooms", ooms},
      {"timeline_points", r.timeline.size()},
      {"timeline", timeline_json(r)},
  };
}

nlohmann::json replay_document(const ReplayTrace& trace, const std::string& path, const ReplayRun& run,
                               nlohmann::json sweep) {
  const VersionInfo version = version_info();
  nlohmann::json skipped = nlohmann::json::object();
  for (const auto& [action, n] : trace.skipped_actions) {
    skipped[action] = n;
  }
  return {{"schema", "memstress.replay/1"},
          {"tool_version", version.version},
          {"git_sha", version.git_sha},
          {"trace",
           {{"path", path},
            {"device", run.result.trace_device},
            {"devices", trace.devices},
            {"events", trace.events.size()},
            {"skipped_actions", skipped}}},
          {"replay", replay_json(run)},
          {"sweep", std::move(sweep)}};
}

std::string format_replay(const ReplayTrace& trace, const std::string& path, const ReplayRun& run) {
  const ReplayResult& r = run.result;
  const ReplayCounts& c = r.counts;
  std::string out = fmt::format(
      "replay: {} (device {} of the trace{}), {} events\nthrough: {} (alloc-conf: {}) on {} ({}), pending "
      "frees: {}\n\n",
      path, r.trace_device,
      r.other_devices.empty() ? "" : fmt::format("; not replayed: {}", fmt::join(r.other_devices, ", ")),
      c.events, r.allocator, run.alloc_conf.empty() ? "defaults" : run.alloc_conf, r.device_label,
      human_bytes(r.capacity), to_string(r.pending_frees));
  std::vector<TableLine> lines{{"figure", "value"}};
  lines.push_back({"peak allocated (allocated_bytes.all.peak)", bytes_cell(r.peak_allocated)});
  lines.push_back({"peak reserved (reserved_bytes.all.peak)", bytes_cell(r.peak_reserved)});
  lines.push_back({"peak active (active_bytes.all.peak)", bytes_cell(r.peak_active)});
  lines.push_back({"peak requested (requested_bytes.all.peak)", bytes_cell(r.peak_requested)});
  if (r.trace_peak_reserved) {
    lines.push_back(
        {"recorded allocator's peak reserved (segment lines)", bytes_cell(*r.trace_peak_reserved)});
  }
  lines.push_back({"OOM margin (capacity - peak reserved)",
                   bytes_cell(static_cast<std::int64_t>(r.capacity) - r.peak_reserved)});
  lines.push_back(
      {"reserved - allocated (end of trace)", bytes_cell(r.fragmentation.reserved_minus_allocated)});
  lines.push_back(
      {"utilization (peak allocated / peak reserved)", fmt::format("{:.4f}", r.fragmentation.utilization)});
  lines.push_back({"external fragmentation (1 - largest free / free, end)",
                   r.fragmentation.external ? fmt::format("{:.4f}", *r.fragmentation.external) : "-"});
  lines.push_back({"num_alloc_retries", std::to_string(r.num_alloc_retries)});
  lines.push_back({"OOMs in replay (num_ooms)", std::to_string(r.num_ooms)});
  out += render_table(lines);
  out += fmt::format(
      "\nevents: {} allocs, {} frees ({} held until free_completed), {} frees of ids allocated before the "
      "trace "
      "(skipped), {} frees of allocations that failed in replay (skipped), {} OOMs in the recorded program, "
      "{} "
      "segment lines, {} lines of other devices (skipped), {} allocations live at the end\n",
      c.allocs, c.frees, c.frees_pending, c.unknown_frees, c.frees_of_failed, c.trace_ooms, c.segment_events,
      c.other_device_events, c.live_at_end);
  if (!trace.skipped_actions.empty()) {
    std::vector<std::string> parts;
    for (const auto& [action, n] : trace.skipped_actions) {
      parts.push_back(fmt::format("{} {}", n, action));
    }
    out += fmt::format("lines of unknown actions (skipped): {}\n", fmt::join(parts, ", "));
  }
  if (!r.ooms.empty()) {
    const OomPoint& p = r.ooms.front();
    out += fmt::format(
        "\nfirst OOM: event {} (seq {}), a request of {} on stream {}; largest free block {}, reserved {}, "
        "allocated {}\n  {}\n",
        p.event_index, p.seq, bytes_cell(p.request_bytes), p.stream,
        p.largest_free_block ? bytes_cell(*p.largest_free_block) : "-", bytes_cell(p.reserved),
        bytes_cell(p.allocated), p.message);
  }
  return out;
}

std::string timeline_csv(const ReplayResult& result) {
  std::string out = "event_index,time_ns,allocated,reserved\n";
  for (const TimelinePoint& p : result.timeline) {
    out += fmt::format("{},{},{},{}\n", p.event_index, p.time_ns, p.allocated, p.reserved);
  }
  return out;
}

}  // namespace memstress::replay
