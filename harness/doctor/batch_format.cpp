#include "harness/doctor/batch_format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "harness/core/text_table.hpp"
#include "harness/core/units.hpp"

namespace memstress::doctor {
namespace {

std::string bytes(std::int64_t b) {
  return human_bytes(static_cast<std::uint64_t>(std::max<std::int64_t>(b, 0)));
}

// The template's run: the model's A.
const DoctorInput& template_input(const BatchReport& r) {
  return r.model->template_is_second ? *r.second : *r.first;
}

std::string site_name(const DoctorInput& in, std::int32_t site) {
  if (site == kBeforeRecording) {
    return "(allocated before recording began)";
  }
  if (site < 0 || static_cast<std::size_t>(site) >= in.facts.sites.size()) {
    return in.facts.frames_recorded ? "(no Python frames: from C++, e.g. the backward pass)"
                                    : "(no stack frames)";
  }
  return in.facts.sites[static_cast<std::size_t>(site)].where;
}

std::int32_t oom_site(const BatchReport& r, const replay::OomPoint& p) {
  return template_input(r).facts.site_of(r.model->template_trace.events[p.event_index].id);
}

nlohmann::json try_json(const BatchReport& r, const BatchTry& t) {
  nlohmann::json oom = nullptr;
  if (t.oom) {
    const std::int32_t site = oom_site(r, *t.oom);
    oom = {{"event", t.oom->event_index + 1},
           {"request", t.oom->request_bytes},
           {"site", site},
           {"site_name", site_name(template_input(r), site)},
           {"reserved", t.oom->reserved},
           {"allocated", t.oom->allocated},
           {"largest_free_block",
            t.oom->largest_free_block ? nlohmann::json(*t.oom->largest_free_block) : nullptr}};
  }
  return {{"batch", t.batch},
          {"fits", t.fits},
          {"peak_reserved", t.peak_reserved},
          {"peak_allocated", t.peak_allocated},
          {"refusals_survived", t.refusals_survived},
          {"oom", oom}};
}

// In the user's order: (requests, only in that run).
struct Counts {
  std::size_t requests_first, requests_second, only_first, only_second;
};

Counts counts(const BatchReport& r) {
  const BatchModel& m = *r.model;
  return m.template_is_second ? Counts{m.requests_b, m.requests_a, m.match.only_b, m.match.only_a}
                              : Counts{m.requests_a, m.requests_b, m.match.only_a, m.match.only_b};
}

bool well_matched(const BatchReport& r) {
  return r.model->well_matched();
}

}  // namespace

nlohmann::json batch_document(const BatchReport& r) {
  const BatchModel& m = *r.model;
  const BatchAnswer& a = *r.answer;
  const Counts c = counts(r);
  nlohmann::json tries = nlohmann::json::array();
  for (const BatchTry& t : a.tries) {
    tries.push_back(try_json(r, t));
  }
  nlohmann::json safe_tries = nlohmann::json::array();
  for (const BatchTry& t : a.safe_tries) {
    safe_tries.push_back(try_json(r, t));
  }
  return {
      {"schema", "memstress.predict-batch/1"},
      {"inputs",
       {{{"path", r.path_first}, {"batch", r.batch_first}},
        {{"path", r.path_second}, {"batch", r.batch_second}}}},
      {"template", m.template_is_second ? 1 : 0},
      {"match",
       {{"requests", {c.requests_first, c.requests_second}},
        {"matched", m.match.pairs.size()},
        {"anchors", m.match.anchors},
        {"only_in", {c.only_first, c.only_second}},
        {"by_site", m.match.by_site},
        {"by_position", m.match.by_position},
        {"reliable", well_matched(r)}}},
      {"model",
       {{"constant_bytes", m.constant_bytes},
        {"bytes_per_sample", m.bytes_per_sample},
        {"held_workspaces", m.held},
        {"freed_at_once", m.freed_at_once},
        {"survivable_workspaces", m.survivable},
        {"convolutions_marked", m.convolutions_marked},
        {"capped_scratch", m.capped},
        {"multiprocessors", m.multiprocessors == 0 ? nlohmann::json() : nlohmann::json(m.multiprocessors)}}},
      {"setting",
       {{"allocator", a.setting.allocator},
        {"alloc_conf", a.setting.conf.text},
        {"pytorch_alloc_conf", pytorch_conf(a.setting)},
        {"origin", r.setting_origin}}},
      {"capacity", a.capacity},
      {"largest_fit", a.largest_fit ? try_json(r, *a.largest_fit) : nullptr},
      {"first_fail", a.first_fail ? try_json(r, *a.first_fail) : nullptr},
      {"tries", tries},
      {"safe_tries", safe_tries},
      {"advice", far_beyond_advice(r)},
      {"estimate", a.largest_fit ? nlohmann::json(a.largest_fit->batch) : nlohmann::json(nullptr)},
      {"safe_batch", a.safe_fit ? nlohmann::json(a.safe_fit->batch) : nlohmann::json(nullptr)},
      {"range",
       {{"low", a.safe_fit ? nlohmann::json(a.safe_fit->batch) : nlohmann::json(nullptr)},
        {"high", a.largest_fit ? nlohmann::json(a.largest_fit->batch) : nlohmann::json(nullptr)}}},
      {"sure", sure(r)},
      {"record_at", record_at(r)},
  };
}

bool sure(const BatchReport& r) {
  const BatchAnswer& a = *r.answer;
  if (!a.largest_fit || !a.safe_fit || !a.first_fail || !well_matched(r)) {
    return false;
  }
  const std::uint64_t larger = std::max(r.batch_first, r.batch_second);
  return static_cast<double>(a.largest_fit->batch) <= kFarBeyond * static_cast<double>(larger) &&
         static_cast<double>(a.safe_fit->batch) >= kNarrow * static_cast<double>(a.largest_fit->batch);
}

nlohmann::json record_at(const BatchReport& r) {
  const BatchAnswer& a = *r.answer;
  if (sure(r) || !a.largest_fit || !a.first_fail) {
    return nullptr;
  }
  const std::uint64_t n = a.safe_fit ? a.safe_fit->batch : a.largest_fit->batch;
  const std::uint64_t quarter = std::max<std::uint64_t>(1, n / 4);
  return {quarter, std::max(quarter + 1, n / 2)};
}

std::string far_beyond_advice(const BatchReport& r) {
  const BatchAnswer& a = *r.answer;
  const std::uint64_t larger = std::max(r.batch_first, r.batch_second);
  // Only for an answer found (a batch that fits and the next that does not), not for "fits up to
  // --max-batch".
  if (!a.largest_fit || !a.first_fail || larger == 0 ||
      static_cast<double>(a.largest_fit->batch) <= kFarBeyond * static_cast<double>(larger)) {
    return "";
  }
  const std::uint64_t n = a.largest_fit->batch;
  const std::uint64_t quarter = std::max<std::uint64_t>(1, n / 4);
  const std::uint64_t half = std::max(quarter + 1, n / 2);
  return fmt::format(
      "{} is {:.1f} times the larger batch recorded ({}): a request that stops growing in between (a library "
      "workspace with a cap) is taken to grow all the way, so the answer may be low. To confirm it, record "
      "again at about {} and {} (a quarter and a half of it).",
      n, static_cast<double>(n) / static_cast<double>(larger), larger, quarter, half);
}

std::string format_batch(const BatchReport& r) {
  const BatchModel& m = *r.model;
  const BatchAnswer& a = *r.answer;
  const Counts c = counts(r);
  std::string out = fmt::format("memstress predict-batch: {} (batch {}) and {} (batch {})\n", r.path_first,
                                r.batch_first, r.path_second, r.batch_second);
  out += fmt::format(
      "  matched {} of {} and {} requests ({}); {} of {} only, {} of {} only ({}: the other run's are "
      "left out)\n",
      m.match.pairs.size(), c.requests_first, c.requests_second,
      m.match.by_position ? "by position: the runs differ too much to align"
      : m.match.by_site   ? "by allocation site and stream"
                          : "by order within each stream: no stack frames",
      c.only_first, r.path_first, c.only_second, r.path_second,
      fmt::format("the template is the run at batch {}, its own kept at their size", m.batch_a));
  out += fmt::format(
      "  model: {} asked for by requests that do not change with the batch, {} more asked for per sample "
      "over the run, {} workspaces held at their larger size, {} convolutions' workspaces PyTorch does "
      "without "
      "when refused (Note [A workspace PyTorch does without]), {}\n",
      human_bytes(m.constant_bytes), bytes(static_cast<std::int64_t>(m.bytes_per_sample)), m.held,
      m.survivable,
      m.multiprocessors == 0
          ? fmt::format("no reduction's scratch capped (the GPU's multiprocessors not recorded, or the "
                        "capacity is another GPU's: {})",
                        r.flags.multiprocessors)
          : fmt::format("{} reductions' scratch buffers capped at one wave of the GPU's {} multiprocessors",
                        m.capped, m.multiprocessors));
  std::vector<BatchTry> sorted = a.tries;
  std::sort(sorted.begin(), sorted.end(), [](const auto& x, const auto& y) { return x.batch < y.batch; });
  std::vector<BatchTry> fits;
  std::copy_if(sorted.begin(), sorted.end(), std::back_inserter(fits), [](const auto& x) { return x.fits; });
  if (fits.size() >= 2 && fits.back().batch > fits.front().batch) {
    out += fmt::format("  the peak grows by {} per sample (peak allocated, batch {} to {})\n",
                       bytes((fits.back().peak_allocated - fits.front().peak_allocated) /
                             static_cast<std::int64_t>(fits.back().batch - fits.front().batch)),
                       fits.front().batch, fits.back().batch);
  }
  out += fmt::format("  judged: {} ({}) on {}\n\n",
                     pytorch_conf(a.setting).empty() ? "PyTorch's defaults" : pytorch_conf(a.setting),
                     r.setting_origin, human_bytes(a.capacity));
  std::vector<TableLine> t{{"BATCH", "FITS", "PEAK RESERVED", "PEAK ALLOCATED"}};
  for (const BatchTry& x : sorted) {
    t.push_back({std::to_string(x.batch), x.fits ? "yes" : "no", x.fits ? bytes(x.peak_reserved) : "-",
                 x.fits ? bytes(x.peak_allocated) : "-"});
  }
  out += render_table(t);
  if (!well_matched(r)) {
    out += fmt::format(
        "-> warning: only {} of the requests were matched{}: the prediction below is unreliable.\n",
        m.match.pairs.size(), m.match.by_position ? " (by position)" : "");
  }
  if (!a.largest_fit) {
    out += "-> Not even a batch of 1 fits.\n";
  } else if (!a.safe_fit) {
    out += fmt::format(
        "-> The model's largest batch is {}, but not even the smaller batch recorded is sure to fit: no "
        "batch is "
        "named safe.\n",
        a.largest_fit->batch);
  } else {
    // Without the GPU's multiprocessors (snapshots that PyTorch wrote, not the recorder) no reduction's
    // scratch is capped (Note [A reduction's scratch stops growing]): the answer is low, and the line that
    // gives it says how to mend that (a ViT-B/16 from PyTorch's own snapshots came out 9% low without, 1-3%
    // with).
    out += fmt::format(
        "-> The largest batch that is safe: {} (peak reserved {} of {}); the estimate is {}, so the largest "
        "batch lies in {}..{} (Note [The batch that is safe]){}.\n",
        a.safe_fit->batch, bytes(a.safe_fit->peak_reserved), human_bytes(a.capacity), a.largest_fit->batch,
        a.safe_fit->batch, a.largest_fit->batch,
        m.multiprocessors == 0
            ? fmt::format(
                  "; the snapshots do not say how many multiprocessors the GPU has (only the memstress "
                  "recorder notes it), so reductions' scratch is taken to grow without a cap and the "
                  "range may be low: give {} N (torch.cuda.get_device_properties(0).multi_processor_count)",
                  r.flags.multiprocessors)
            : std::string());
    if (const std::uint64_t refused = a.largest_fit->refusals_survived; refused != 0) {
      out += fmt::format(
          "-> At {} the allocator refuses {} workspace{} and the program goes on without {}, as PyTorch's "
          "cuDNN convolutions do; the safe end, {}, has each one refused settle for its size at batch {} "
          "(Note "
          "[A workspace PyTorch does without]).\n",
          a.largest_fit->batch, refused, refused == 1 ? "" : "s", refused == 1 ? "it" : "them",
          a.safe_fit->batch, m.batch_b);
    }
  }
  if (!m.convolutions_marked && m.freed_at_once != 0) {
    out += fmt::format(
        "-> The recordings do not mark what convolutions allocate (memstress_torch.record and find_max_batch "
        "do): {} requests freed as soon as made, workspaces perhaps, are taken as needed. Where cuDNN can do "
        "without them the answer is low (Note [A workspace PyTorch does without]).\n",
        m.freed_at_once);
  }
  if (a.first_fail && a.first_fail->oom) {
    const replay::OomPoint& p = *a.first_fail->oom;
    out += fmt::format(
        "-> At {} it runs out at event {}: a request of {} at {}, with {} allocated and {} reserved (largest "
        "free "
        "block {}).\n",
        a.first_fail->batch, p.event_index + 1, human_bytes(p.request_bytes),
        site_name(template_input(r), oom_site(r, p)), bytes(p.allocated), bytes(p.reserved),
        p.largest_free_block ? bytes(*p.largest_free_block) : "unknown");
  } else if (!a.first_fail) {
    out += fmt::format("-> It fits up to {} {}.\n", r.flags.max_batch, r.max_batch);
  }
  if (const std::string advice = far_beyond_advice(r); !advice.empty()) {
    out += "-> " + advice + "\n";
  } else if (const nlohmann::json at = record_at(r); !at.is_null()) {
    out += fmt::format(
        "-> Not sure: the range is wide or the runs matched poorly. Record again at about {} and {} and "
        "predict "
        "from those.\n",
        at[0].get<std::uint64_t>(), at[1].get<std::uint64_t>());
  }
  return out;
}

}  // namespace memstress::doctor
