// memstress replay TRACE: replays a memstress trace (--alloc-trace's own), a PyTorch memory snapshot or an
// RMM log (both converted first by python/memstress/convert.py, harness/replay/snapshot_input.hpp)
// through any allocator on a real GPU or a simulated device of any capacity, and reports PyTorch's peaks,
// fragmentation, retries and OOMs (harness/replay). --sweep ranks a grid of allocator settings. Exit 0 when
// the replay ran (OOMs in it are findings, reported), 2 on bad input, 3 when the device asked for is missing.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <memory>
#include <optional>

#include "apps/commands.hpp"
#include "apps/flag_names.hpp"
#include "harness/alloc/alloc_config.hpp"
#include "harness/alloc/factory.hpp"
#include "harness/core/atomic_file.hpp"
#include "harness/core/error.hpp"
#include "harness/core/json_text.hpp"
#include "harness/env/environment.hpp"
#include "harness/memory/device_spec.hpp"
#include "harness/replay/replay_trace.hpp"
#include "harness/replay/report.hpp"
#include "harness/replay/snapshot_input.hpp"
#include "harness/replay/sweep.hpp"

namespace memstress::app {
namespace {

struct ReplayFlags {
  std::string trace;
  std::string allocator = "caching";
  std::string alloc_conf;
  std::string device = "auto";
  std::string trace_device;
  std::string format = "table";
  std::string out;
  std::string timeline;
  std::size_t timeline_points = 2000;
  bool sweep = false;
};

int replay_command(const ReplayFlags& f) {
  // Everything that can be wrong with the input is found before the device is touched.
  const DeviceSpec spec = DeviceSpec::parse(f.device, "--device");
  AllocatorSpec allocator_spec;
  allocator_spec.flags = allocator_flags();
  allocator_spec.name = f.allocator;
  allocator_spec.conf = AllocConfig::parse(f.alloc_conf, "--alloc-conf");  // parsed once, and carried
  validate(allocator_spec);
  if (!f.out.empty()) {
    check_output_path(f.out, "--out");
  }
  if (!f.timeline.empty()) {
    check_output_path(f.timeline, "--timeline");
  }
  std::optional<replay::ConvertedTrace> converted;  // a PyTorch snapshot or RMM log, converted first
  if (replay::input_kind(f.trace) != replay::InputKind::memstress_trace) {
    converted.emplace(f.trace);
  }
  const replay::ReplayTrace trace =
      converted ? replay::read_replay_trace(converted->trace(), f.trace + " (as converted to a trace)")
                : replay::read_replay_trace(f.trace);
  if (trace.events.empty()) {
    throw InputError(fmt::format("trace '{}': no allocation events: nothing to replay", f.trace));
  }
  replay::ReplayOptions options;
  options.device = f.trace_device;
  options.device_what = "--trace-device";
  options.timeline_points = f.timeline_points;

  // The simulated device places segments as the CUDA driver does (SimAddressOrder::cuda_like), which
  // decides ties in the caching allocator's best fit, as on the GPU the trace was recorded on.
  const std::unique_ptr<DeviceBackend> backend = make_backend(spec, SimAddressOrder::cuda_like);
  replay::ReplayRun run;
  run.alloc_conf = f.alloc_conf;
  {
    const std::unique_ptr<Allocator> allocator = make_allocator(allocator_spec, *backend);
    run.result = replay::replay_trace(trace, *allocator, options);
  }
  nlohmann::json sweep_doc = nullptr;
  std::string sweep_text;
  if (f.sweep) {
    const DeviceSpec resolved = DeviceSpec::parse(backend->info().label(), "--device");
    // Simulated devices replay side by side; replays on one real GPU would compete for its memory.
    const unsigned threads = resolved.kind == DeviceSpec::Kind::sim ? 0 : 1;
    const replay::Sweep sweep = replay::run_sweep(
        trace, replay::sweep_grid(allocator_spec.conf),
        [&] { return make_backend(resolved, SimAddressOrder::cuda_like); }, options, threads);
    sweep_doc = replay::sweep_json(sweep);
    sweep_text = replay::format_sweep(sweep);
  }
  nlohmann::json doc = replay::replay_document(trace, f.trace, run, sweep_doc);
  doc["environment"] = to_json(collect_environment());  // what it ran on: GPU, driver, CUDA, host
  if (!f.out.empty()) {
    write_file_atomically(f.out, json_text(doc, 2) + "\n", "--out");
  }
  if (!f.timeline.empty()) {
    write_file_atomically(f.timeline, replay::timeline_csv(run.result), "--timeline");
  }
  if (f.format == "json") {
    print_all(json_text(doc, 2) + "\n");
  } else {
    std::string text = replay::format_replay(trace, f.trace, run);
    if (f.sweep) {
      text += fmt::format("\nsweep ({} settings, each on a fresh {}), by peak reserved:\n\n{}",
                          sweep_doc["rows"].size(), run.result.device_label, sweep_text);
    }
    print_all(text);
  }
  return 0;
}

}  // namespace

Subcommand add_replay(CLI::App& app) {
  auto flags = std::make_shared<ReplayFlags>();
  CLI::App* sub = app.add_subcommand(
      "replay",
      "Replay an allocation trace (a PyTorch snapshot, an RMM log or --alloc-trace's) through an allocator");
  sub->add_option("TRACE", flags->trace,
                  "A memstress trace (harness/trace/trace_format.md), a PyTorch memory snapshot "
                  "(torch.cuda.memory._dump_snapshot) or an RMM log; plain or .gz")
      ->required();
  sub->add_option("-a,--allocator", flags->allocator,
                  fmt::format("{}, or {} (memstress list says what each is)",
                              fmt::join(allocator_names(), ", "), kPluginForm))
      ->capture_default_str();
  sub->add_option("--alloc-conf", flags->alloc_conf,
                  "Allocator settings in PyTorch's syntax (default: $MEMSTRESS_ALLOC_CONF)");
  sub->add_option("-d,--device", flags->device, "auto, cuda, cuda:N, sim or sim:CAPACITY (e.g. sim:40G)")
      ->capture_default_str();
  sub->add_option("--trace-device", flags->trace_device,
                  "The trace's device to replay, e.g. cuda:1 (default: the first in the trace)");
  sub->add_option("--format", flags->format, "stdout format: table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  sub->add_option("-o,--out", flags->out, "Write the memstress.replay/1 JSON document here")->check(a_path());
  sub->add_option("--timeline", flags->timeline,
                  "Write the timeline of allocated and reserved bytes here (CSV, at most ~2000 points)")
      ->check(a_path());
  sub->add_option("--timeline-points", flags->timeline_points,
                  "At most this many timeline points (each the peaks over its stretch of events), in --out's "
                  "document and in --timeline's CSV")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1000000}))
      ->capture_default_str();
  sub->add_flag("--sweep", flags->sweep,
                "Also replay under a grid of allocators and settings, ranked by peak reserved");
  return {sub, [flags] {
            flags->alloc_conf = resolved_alloc_conf(flags->alloc_conf);
            return replay_command(*flags);
          }};
}

}  // namespace memstress::app
