// The memstress.doctor/1 document (harness/doctor/format.hpp).

#include "harness/doctor/format.hpp"

namespace memstress::doctor {
namespace {

nlohmann::json optional_json(const auto& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json oom_at_json(const OomAt& at) {
  return {{"event", at.event},
          {"seq", at.seq},
          {"time_ns", at.time_ns},
          {"request", at.request},
          {"site", at.site}};
}

nlohmann::json setting_json(const replay::SweepSetting& s) {
  return {{"allocator", s.allocator}, {"alloc_conf", s.conf.text}, {"pytorch_alloc_conf", pytorch_conf(s)}};
}

nlohmann::json settings_json(const SettingsAnswer& a) {
  nlohmann::json rows = nlohmann::json::array();
  for (const SettingRow& row : a.rows) {
    nlohmann::json verdicts = nlohmann::json::array();
    for (const CapacityVerdict& v : row.verdicts) {
      verdicts.push_back({{"capacity", v.capacity},
                          {"fits", v.fits},
                          {"replayed", v.replayed},
                          {"oom", v.oom ? oom_at_json(*v.oom) : nlohmann::json(nullptr)}});
    }
    nlohmann::json j = setting_json(row.setting);
    j.update({{"peak_reserved", row.peak_reserved},
              {"peak_allocated", row.peak_allocated},
              {"utilization", row.utilization},
              {"num_alloc_retries", row.retries},
              {"capacities", verdicts}});
    rows.push_back(std::move(j));
  }
  return {{"unconstrained_capacity", a.unconstrained_capacity},
          {"rows", rows},
          {"recommended", optional_json(a.recommended)},
          {"recommended_fits_every_capacity", a.recommended_fits_all},
          {"recorded", optional_json(a.recorded)}};
}

nlohmann::json peers_json(const std::vector<PeerRow>& peers) {
  nlohmann::json rows = nlohmann::json::array();
  for (const PeerRow& row : peers) {
    nlohmann::json verdicts = nlohmann::json::array();
    for (const CapacityVerdict& v : row.verdicts) {
      verdicts.push_back(
          {{"capacity", v.capacity}, {"fits", v.judged ? nlohmann::json(v.fits) : nlohmann::json(nullptr)}});
    }
    rows.push_back({{"allocator", row.allocator},
                    {"device", row.device.empty() ? nlohmann::json(nullptr) : nlohmann::json(row.device)},
                    {"skipped", row.skipped.empty() ? nlohmann::json(nullptr) : nlohmann::json(row.skipped)},
                    {"peak_reserved", row.peak_reserved},
                    {"peak_allocated", row.peak_allocated},
                    {"utilization", row.utilization},
                    {"num_ooms", row.ooms},
                    {"capacities", verdicts}});
  }
  return rows;
}

nlohmann::json limit_json(const Limit& l) {
  return {{"bytes", l.bytes},
          {"source", limit_source_name(l.source)},
          {"origin", l.origin},
          {"upper", optional_json(l.upper)},
          {"device_capacity", optional_json(l.device_capacity)}};
}

nlohmann::json oom_json(const OomAnalysis& o) {
  nlohmann::json grant = nlohmann::json::array();
  for (const GrantingSetting& g : o.would_grant) {
    nlohmann::json j = setting_json(g.setting);
    j["reserved"] = g.reserved;
    if (o.limit) {
      j["headroom"] = static_cast<std::int64_t>(o.limit->bytes) - g.reserved;
    }
    grant.push_back(std::move(j));
  }
  nlohmann::json sites = nlohmann::json::array();
  for (const SiteShare& s : o.sites) {
    sites.push_back({{"site", s.site}, {"bytes", s.bytes}, {"count", s.count}});
  }
  return {{"count", o.count},
          {"survived", o.survived},
          {"at", oom_at_json(o.at)},
          {"device_free", optional_json(o.device_free)},
          {"recorded_reserved", optional_json(o.recorded_reserved)},
          {"recorded_peak_reserved", optional_json(o.recorded_peak_reserved)},
          {"limit", o.limit ? limit_json(*o.limit) : nlohmann::json(nullptr)},
          {"capacity", optional_json(o.capacity())},
          {"reserved", o.reserved},
          {"allocated", o.allocated},
          {"largest_free_block", optional_json(o.largest_free_block)},
          {"reproduced", optional_json(o.reproduced)},
          {"replay_failed_earlier", o.replay_failed_earlier},
          {"cause", o.cause ? nlohmann::json(cause_name(*o.cause)) : nlohmann::json(nullptr)},
          {"would_grant", grant},
          {"named", o.named ? setting_json(o.would_grant[*o.named].setting) : nlohmann::json(nullptr)},
          {"decided_by_the_step", o.decided_by_the_step},
          {"live", o.live},
          {"floor", optional_json(o.floor)},
          {"sites", sites}};
}

nlohmann::json batch_advice_json(const BatchAdvice& b) {
  nlohmann::json j = {{"safe_batch", b.safe}, {"estimate", b.estimate}};
  if (b.top) {  // an inferred limit's top (Note [The limit in force])
    j["at_the_limits_top"] = {
        {"limit", b.top->limit}, {"safe_batch", b.top->safe}, {"estimate", b.top->estimate}};
  }
  if (b.batch > 0) {
    j["at_batch"] = {
        {"batch", b.batch}, {"peak_live", b.peak_live}, {"grows_with_batch", b.grows_with_batch}};
  }
  return j;
}

const char* steps_name(StepsVerdict v) noexcept {
  switch (v) {
    case StepsVerdict::steps:
      return "steps";
    case StepsVerdict::keeps_much:
      return "keeps_much";
    case StepsVerdict::no_repeat:
      return "no_repeat";
  }
  return "unknown";
}

nlohmann::json fit_json(const LineFit& f) {
  return {{"slope_per_step", f.slope}, {"intercept", f.intercept}, {"r2", f.r2},
          {"points", f.points},        {"rises", f.rises},         {"growing", f.growing()}};
}

}  // namespace

nlohmann::json doctor_document(const DoctorReport& r) {
  nlohmann::json sites = nlohmann::json::array();
  for (const Site& s : r.sites) {
    sites.push_back({{"where", s.where},
                     {"filename", s.filename},
                     {"line", s.line},
                     {"function", s.function},
                     {"user_code", s.user_code},
                     {"stack", s.stack}});
  }
  nlohmann::json at_peak = nlohmann::json::array();
  for (const SiteShare& s : r.sites_at_peak) {
    at_peak.push_back({{"site", s.site},
                       {"name", r.site_name(s.site)},
                       {"bytes", s.bytes},
                       {"count", s.count},
                       {"largest", s.largest}});
  }
  nlohmann::json floors = nlohmann::json::array();
  for (std::size_t k = 0; k < r.growth.floors.size(); ++k) {
    floors.push_back({{"event", r.growth.floors[k].position + 1},
                      {"time_ns", r.growth.floor_times_ns[k]},
                      {"bytes", r.growth.floors[k].bytes}});
  }
  nlohmann::json growing = nlohmann::json::array();
  for (const SiteGrowth& g : r.growth.sites) {
    growing.push_back({{"site", g.site},
                       {"name", r.site_name(g.site)},
                       {"first", g.first},
                       {"last", g.last},
                       {"fit", fit_json(g.fit)}});
  }
  nlohmann::json timeline = nlohmann::json::array();
  for (const replay::TimelinePoint& p : r.timeline) {
    timeline.push_back({p.event_index, p.time_ns, p.allocated, p.reserved});
  }
  const Needed& n = r.needed;
  const Recommendation recommended = recommendation(r);
  nlohmann::json advice = nlohmann::json::array();
  for (const Advice& a : advice_of(format_doctor(r))) {
    advice.push_back({{"section", a.section}, {"text", a.text}});
  }
  return {
      {"schema", "memstress.doctor/1"},
      {"input",
       {{"path", r.input},
        {"source", r.source},
        {"device", r.trace_device},
        {"other_devices", r.other_devices},
        {"frames_recorded", r.frames_recorded},
        {"recorder", r.recorder}}},
      {"setting", setting_json(r.setting)},
      {"setting_origin", r.setting_origin},
      {"capacities", r.capacities},
      {"capacity_origin", r.capacity_origin},
      {"needed",
       {{"peak_allocated", n.peak_allocated},
        {"peak_reserved", n.peak_reserved},
        {"peak_requested", n.peak_requested},
        {"recorded_peak_reserved", optional_json(n.recorded_peak_reserved)},
        {"reserved_minus_allocated_at_peak", n.reserved_minus_allocated},
        {"utilization", n.utilization},
        {"external_fragmentation_at_peak", optional_json(n.external_fragmentation)},
        {"peak_event", n.peak_event},
        {"peak_time_ns", n.peak_time_ns},
        {"start_ns", n.start_ns},
        {"events", n.events},
        {"duration_ns", n.duration_ns}}},
      {"sites", sites},
      {"at_peak", {{"live_bytes", r.live_at_peak}, {"sites", at_peak}}},
      {"oom", r.oom ? oom_json(*r.oom) : nlohmann::json(nullptr)},
      {"refusals_survived",
       r.refusals ? nlohmann::json({{"count", r.refusals->count}, {"largest_request", r.refusals->largest}})
                  : nlohmann::json(nullptr)},
      {"batch_advice", r.batch_advice ? batch_advice_json(*r.batch_advice) : nlohmann::json(nullptr)},
      // The setting the doctor recommends, none when none (`oom.named` is only what grants the OOM's
      // request), and the sentence the text says it with; and every "->" sentence of the text, by section.
      {"recommendation",
       {{"setting", recommended.setting ? setting_json(*recommended.setting) : nlohmann::json(nullptr)},
        {"sentence", recommended.sentence}}},
      {"advice", advice},
      {"recording_stops_at_the_oom", r.oom.has_value()},
      {"settings", settings_json(r.settings)},
      {"peers", peers_json(r.peers)},
      {"growth",
       {{"steps", steps_name(r.growth.steps)},
        {"step_requests",
         r.growth.step_requests > 0 ? nlohmann::json(r.growth.step_requests) : nlohmann::json(nullptr)},
        {"kept_per_step", r.growth.kept_per_step},
        {"rise_per_step", r.growth.rise_per_step},
        {"ends_at_oom", r.growth.ends_at_oom},
        {"ends_in_the_loop", r.growth.ends_in_the_loop},
        {"judged", r.growth.judged()},
        {"falls_back", r.growth.falls_back},
        {"grows", r.growth.grows()},
        {"floors", floors},
        {"fit", fit_json(r.growth.fit)},
        {"bytes_per_second", r.growth.bytes_per_second},
        {"sites", growing}}},
      {"timeline", {{"columns", {"event_index", "time_ns", "allocated", "reserved"}}, {"points", timeline}}},
  };
}

}  // namespace memstress::doctor
