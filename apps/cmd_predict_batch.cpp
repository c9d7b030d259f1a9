// memstress predict-batch SNAP_A SNAP_B --batch A,B: the largest batch that fits a capacity under a
// setting, from one program recorded at two batch sizes (harness/doctor/batch_model.hpp, Note [A request
// as a function of the batch]). Exit 0 when the search ran, 2 for bad input, 3 when the converter cannot
// run.

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <iterator>
#include <memory>
#include <sstream>

#include "apps/commands.hpp"
#include "harness/core/atomic_file.hpp"
#include "harness/core/error.hpp"
#include "harness/core/text_table.hpp"
#include "harness/core/units.hpp"
#include "harness/doctor/batch_model.hpp"

namespace memstress::app {
namespace {

struct PredictFlags {
  std::string snapshot_a;
  std::string snapshot_b;
  std::string batch;
  std::string capacity;
  std::string alloc_conf;
  std::string trace_device;
  std::string format = "table";
  std::string out;
  std::uint64_t max_batch = 1'000'000;
  std::string write_trace;  // N:FILE
};

std::pair<std::uint64_t, std::uint64_t> parse_batches(const std::string& text) {
  std::stringstream in(text);
  std::vector<std::uint64_t> values;
  for (std::string item; std::getline(in, item, ',');) {
    std::size_t used = 0;
    std::uint64_t v = 0;
    try {
      v = std::stoull(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || item.front() == '-') {
      throw InputError(fmt::format("--batch '{}': '{}' is not a batch size", text, item));
    }
    values.push_back(v);
  }
  if (values.size() != 2) {
    throw InputError(
        fmt::format("--batch '{}': give the two batch sizes, the first snapshot's first (e.g. 8,16)", text));
  }
  return {values[0], values[1]};
}

std::string bytes(std::int64_t b) {
  return human_bytes(static_cast<std::uint64_t>(std::max<std::int64_t>(b, 0)));
}

nlohmann::json try_json(const doctor::BatchTry& t, const doctor::DoctorInput& a,
                        const replay::ReplayTrace& tmpl) {
  nlohmann::json oom = nullptr;
  if (t.oom) {
    const std::uint64_t id = tmpl.events[t.oom->event_index].id;
    oom = {{"event", t.oom->event_index + 1},
           {"request", t.oom->request_bytes},
           {"site", a.facts.site_of(id)},
           {"reserved", t.oom->reserved},
           {"allocated", t.oom->allocated},
           {"largest_free_block",
            t.oom->largest_free_block ? nlohmann::json(*t.oom->largest_free_block) : nullptr}};
  }
  return {{"batch", t.batch},
          {"fits", t.fits},
          {"peak_reserved", t.peak_reserved},
          {"peak_allocated", t.peak_allocated},
          {"oom", oom}};
}

std::string site_name(const doctor::DoctorInput& a, std::int32_t site) {
  return site >= 0 ? a.facts.sites[static_cast<std::size_t>(site)].where : std::string("(no stack frames)");
}

int predict_command(const PredictFlags& f) {
  const auto [batch_a, batch_b] = parse_batches(f.batch);
  std::optional<std::uint64_t> capacity;
  if (!f.capacity.empty()) {
    capacity = parse_bytes(f.capacity, "--capacity");
    if (*capacity == 0) {
      throw InputError("--capacity 0: a capacity must be more than 0 bytes");
    }
  }
  const doctor::DoctorInput a = doctor::load_input(f.snapshot_a);
  const doctor::DoctorInput b = doctor::load_input(f.snapshot_b);
  if (!capacity) {
    capacity = a.facts.recorded_number("allocator_capacity");
  }
  if (!capacity) {
    throw InputError(
        fmt::format("{}: the snapshot does not say how much memory the GPU had: give --capacity "
                    "(e.g. --capacity 40G)",
                    f.snapshot_a));
  }
  replay::SweepSetting setting{"caching", ""};
  std::string origin = "assumed: PyTorch's defaults";
  if (!f.alloc_conf.empty()) {
    setting = doctor::setting_from_pytorch_conf(f.alloc_conf, "--alloc-conf");
    origin = "--alloc-conf";
  } else if (a.facts.alloc_conf) {
    setting =
        doctor::setting_from_pytorch_conf(*a.facts.alloc_conf, f.snapshot_a + ": its allocator_settings");
    origin = "the first snapshot";
  }
  const doctor::BatchModel model = doctor::build_batch_model(a, b, batch_a, batch_b, f.trace_device);
  const doctor::BatchAnswer answer = doctor::search_batch(model, setting, *capacity, f.max_batch);
  const doctor::DoctorInput& tmpl = model.template_is_second ? b : a;  // whose events the template's are
  if (!f.write_trace.empty()) {
    const std::size_t colon = f.write_trace.find(':');
    std::uint64_t n = 0;
    const std::string number = f.write_trace.substr(0, colon);
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), n);
    if (colon == std::string::npos || ec != std::errc() || end != number.data() + number.size() || n == 0 ||
        colon + 1 == f.write_trace.size()) {
      throw InputError(
          fmt::format("--write-trace '{}': give BATCH:FILE, e.g. 64:batch64.trace.csv", f.write_trace));
    }
    write_file_atomically(
        f.write_trace.substr(colon + 1),
        replay::format_replay_trace(doctor::trace_at(model, n),
                                    fmt::format("predicted by memstress predict-batch at batch {} "
                                                "from {} (batch {}) and {} (batch {})",
                                                n, f.snapshot_a, batch_a, f.snapshot_b, batch_b)),
        "--write-trace");
  }

  nlohmann::json tries = nlohmann::json::array();
  for (const doctor::BatchTry& t : answer.tries) {
    tries.push_back(try_json(t, tmpl, model.template_trace));
  }
  const nlohmann::json doc = {
      {"schema", "memstress.predict-batch/1"},
      {"inputs",
       {{{"path", f.snapshot_a}, {"batch", batch_a}}, {{"path", f.snapshot_b}, {"batch", batch_b}}}},
      {"match",
       {{"requests", {model.requests_a, model.requests_b}},
        {"matched", model.match.pairs.size()},
        {"only_first", model.match.only_a},
        {"only_second", model.match.only_b},
        {"by_site", model.match.by_site},
        {"by_position", model.match.by_position}}},
      {"model", {{"constant_bytes", model.constant_bytes}, {"bytes_per_sample", model.bytes_per_sample}}},
      {"setting",
       {{"allocator", setting.allocator},
        {"alloc_conf", setting.conf},
        {"pytorch_alloc_conf", doctor::pytorch_conf(setting)},
        {"origin", origin}}},
      {"capacity", *capacity},
      {"largest_fit",
       answer.largest_fit ? try_json(*answer.largest_fit, tmpl, model.template_trace) : nullptr},
      {"first_fail", answer.first_fail ? try_json(*answer.first_fail, tmpl, model.template_trace) : nullptr},
      {"tries", tries},
  };
  if (!f.out.empty()) {
    write_file_atomically(f.out, doc.dump(2) + "\n", "--out");
  }
  if (f.format == "json") {
    std::fputs((doc.dump(2) + "\n").c_str(), stdout);
    return 0;
  }
  std::string out = fmt::format("memstress predict-batch: {} (batch {}) and {} (batch {})\n", f.snapshot_a,
                                batch_a, f.snapshot_b, batch_b);
  out += fmt::format(
      "  matched {} of {} and {} requests ({}); {} of the first run only (kept at their size), {} of "
      "the second only (left out)\n",
      model.match.pairs.size(), model.requests_a, model.requests_b,
      model.match.by_position ? "by position: the runs differ too much to align"
      : model.match.by_site   ? "by allocation site and stream"
                              : "by order within each stream: no stack frames",
      model.match.only_a, model.match.only_b);
  out += fmt::format(
      "  model: {} asked for by requests that do not change with the batch, {} more asked for per "
      "sample over the run\n",
      human_bytes(model.constant_bytes), bytes(static_cast<std::int64_t>(model.bytes_per_sample)));
  std::vector<doctor::BatchTry> fits;
  std::copy_if(answer.tries.begin(), answer.tries.end(), std::back_inserter(fits),
               [](const auto& x) { return x.fits; });
  std::sort(fits.begin(), fits.end(), [](const auto& x, const auto& y) { return x.batch < y.batch; });
  if (fits.size() >= 2 && fits.back().batch > fits.front().batch) {
    out += fmt::format("  the peak grows by {} per sample (peak allocated, batch {} to {})\n",
                       bytes((fits.back().peak_allocated - fits.front().peak_allocated) /
                             static_cast<std::int64_t>(fits.back().batch - fits.front().batch)),
                       fits.front().batch, fits.back().batch);
  }
  out += fmt::format(
      "  judged: {} ({}) on {}\n\n",
      doctor::pytorch_conf(setting).empty() ? "PyTorch's defaults" : doctor::pytorch_conf(setting), origin,
      human_bytes(*capacity));
  std::vector<TableLine> t{{"BATCH", "FITS", "PEAK RESERVED", "PEAK ALLOCATED"}};
  std::vector<doctor::BatchTry> sorted = answer.tries;
  std::sort(sorted.begin(), sorted.end(), [](const auto& x, const auto& y) { return x.batch < y.batch; });
  for (const doctor::BatchTry& x : sorted) {
    t.push_back({std::to_string(x.batch), x.fits ? "yes" : "no", x.fits ? bytes(x.peak_reserved) : "-",
                 x.fits ? bytes(x.peak_allocated) : "-"});
  }
  out += render_table(t);
  if (!answer.largest_fit) {
    out += "-> Not even a batch of 1 fits.\n";
  } else {
    out += fmt::format("-> The largest batch that fits: {} (peak reserved {} of {}).\n",
                       answer.largest_fit->batch, bytes(answer.largest_fit->peak_reserved),
                       human_bytes(*capacity));
  }
  if (answer.first_fail && answer.first_fail->oom) {
    const replay::OomPoint& p = *answer.first_fail->oom;
    out += fmt::format(
        "-> At {} it runs out at event {}: a request of {} at {}, with {} allocated and {} reserved (largest "
        "free "
        "block {}).\n",
        answer.first_fail->batch, p.event_index + 1, human_bytes(p.request_bytes),
        site_name(tmpl, tmpl.facts.site_of(model.template_trace.events[p.event_index].id)),
        bytes(p.allocated), bytes(p.reserved),
        p.largest_free_block ? bytes(*p.largest_free_block) : std::string("unknown"));
  } else if (!answer.first_fail) {
    out += fmt::format("-> It fits up to --max-batch {}.\n", f.max_batch);
  }
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace

Subcommand add_predict_batch(CLI::App& app) {
  auto flags = std::make_shared<PredictFlags>();
  CLI::App* sub = app.add_subcommand(
      "predict-batch", "The largest batch that fits, from two snapshots of one program at two batch sizes");
  sub->add_option("SNAP_A", flags->snapshot_a, "The snapshot at the first batch size")->required();
  sub->add_option("SNAP_B", flags->snapshot_b, "The snapshot at the second batch size")->required();
  sub->add_option("--batch", flags->batch, "The two batch sizes, in the snapshots' order (e.g. 8,16)")
      ->required();
  sub->add_option("--capacity", flags->capacity,
                  "GPU memory PyTorch may use (e.g. 40G); default: the first snapshot's GPU, when it says");
  sub->add_option("--alloc-conf", flags->alloc_conf,
                  "The PYTORCH_CUDA_ALLOC_CONF to judge with (default: the first snapshot's)");
  sub->add_option("--trace-device", flags->trace_device, "The device of the snapshots, e.g. cuda:1");
  sub->add_option("--max-batch", flags->max_batch, "Search no higher than this")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40))
      ->capture_default_str();
  sub->add_option("--format", flags->format, "table or json (memstress.predict-batch/1)")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  sub->add_option("-o,--out", flags->out, "Write the JSON document here");
  sub->add_option("--write-trace", flags->write_trace,
                  "BATCH:FILE: also write the predicted trace at that batch (a memstress trace to replay)");
  return {sub, [flags] { return predict_command(*flags); }};
}

}  // namespace memstress::app
