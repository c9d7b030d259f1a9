// memstress run [WORKLOAD...]: plans the cases, runs them on one device through one shared allocator,
// streams rows to --out as they finish, and prints the results on stdout. Under mpirun every rank runs
// every case on its own GPU; rank 0 gathers the rows into the one results file and alone prints them.
// A rank that fails or hangs ends the job (exit 1) by the --timeout, the results so far kept.

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>

#include "apps/commands.hpp"
#include "apps/flag_names.hpp"
#include "apps/run_flags.hpp"
#include "harness/alloc/alloc_config.hpp"
#include "harness/alloc/factory.hpp"
#include "harness/core/atomic_file.hpp"
#include "harness/core/error.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/json_text.hpp"
#include "harness/core/log.hpp"
#include "harness/core/units.hpp"
#include "harness/dist/job.hpp"
#include "harness/dist/rank_setup.hpp"
#include "harness/memory/backend.hpp"
#include "harness/memory/device_spec.hpp"
#include "harness/memory/numa.hpp"
#include "harness/results/sink.hpp"
#include "harness/run/format.hpp"
#include "harness/run/junit.hpp"
#include "harness/run/plan.hpp"
#include "harness/run/session.hpp"
#include "harness/stats/memory_summary.hpp"
#include "suites/registry.hpp"

namespace memstress::app {
namespace {

// GPU CI (Note in README "In GPU CI"): --require-gpu makes `auto` mean `cuda`.
std::string resolved_device(const RunFlags& f) {
  return required_device(f.device, "--device", f.require_gpu, f.require_gpu_env, "--require-gpu");
}

std::optional<std::vector<std::uint64_t>> size_axis(const RunFlags& f) {
  if (f.minbytes.empty() && f.maxbytes.empty() && f.stepbytes.empty()) {
    return std::nullopt;
  }
  if (f.minbytes.empty() || f.maxbytes.empty()) {
    throw InputError("-b/--minbytes and -e/--maxbytes go together");
  }
  const std::uint64_t increment = f.stepbytes.empty() ? 0 : parse_bytes(f.stepbytes, "-i/--stepbytes");
  if (!f.stepbytes.empty() && increment == 0) {
    throw InputError(fmt::format("-i/--stepbytes '{}': the step must be at least 1 byte", f.stepbytes));
  }
  return size_sweep(parse_bytes(f.minbytes, "-b/--minbytes"), parse_bytes(f.maxbytes, "-e/--maxbytes"),
                    f.stepfactor, increment, run_sweep_names(), f.max_cases);
}

nlohmann::json config_json(const RunFlags& f, const PlanRequest& request) {
  nlohmann::json sizes = nullptr;
  if (request.sizes) {
    sizes = nlohmann::json::array();
    for (const std::uint64_t s : *request.sizes) {
      sizes.push_back(s);
    }
  }
  return {{"workloads", f.workloads},
          {"params", f.params},
          {"sizes", sizes},
          {"device", f.device},
          {"allocator", f.allocator},
          {"host_memory", f.host_memory},
          {"numa", f.numa},
          {"repetitions", f.repetitions},
          {"warmup", f.warmup},
          {"seed", parse_whole_number(f.seed, "--seed")},
          {"full", f.full},
          {"timeout_s", f.timeout_s},
          {"straggler_pct", f.straggler_pct},
          {"in_turn", f.in_turn}};
}

void write_junit(const RunFlags& f, const RunRecord& record) {
  if (!f.junit.empty()) {
    write_file_atomically(f.junit, format_junit(record, f.fail_on_skip ? "--fail-on-skip" : ""), "--junit");
  }
}

// --memory-summary (stderr, so stdout stays parseable) and --snapshot, after each allocator's cases.
void report_allocator(const RunFlags& f, const Allocator& allocator, bool several, const World& world) {
  if (f.memory_summary) {
    std::fputs(memory_summary(allocator.memory_stats(),
                              fmt::format("{} ({})", allocator.backend().info().label(), allocator.name()))
                   .c_str(),
               stderr);
  }
  if (!f.snapshot.empty()) {
    const nlohmann::json snap = allocator.snapshot();
    if (snap.is_null()) {
      note("--snapshot: the {} allocator keeps no segments to show; nothing written", allocator.name());
      return;
    }
    write_file_atomically(rank_path(path_for_allocator(f.snapshot, allocator.name(), several), world),
                          json_text(snap, 1) + "\n", "--snapshot");
  }
}

// What run_command resolved from the flags before anything was touched.
struct RunInput {
  OutputFormat format = OutputFormat::table;
  TableOptions table;
  SessionOptions session;
};

// Runs the planned cases on this rank; rank 0 writes the results and prints them.
int run_ranks(const RunFlags& f, const RunInput& in, World& world, InterruptWatch& interrupts) {
  std::unique_ptr<DeviceBackend> device;
  try {
    device = open_rank_device(resolved_device(f), "--device", f.require_gpu ? "--require-gpu" : "", world);
  } catch (const EnvironmentError& e) {
    // No GPU where one was required: CI gets a failed test naming why, not a missing report.
    if (!f.junit.empty() && world.rank() == 0) {
      write_file_atomically(f.junit, format_junit_not_run("memstress.run", "the run started", e.what()),
                            "--junit");
    }
    throw;
  }
  Session session(in.session, std::move(device), world, interrupts);
  const auto report = [&] {
    if (!session.writer()) {
      return;
    }
    write_junit(f, session.sink().record());
    if (in.format == OutputFormat::json) {
      session.sink().write_document(
          [](std::string_view piece) { std::fwrite(piece.data(), 1, piece.size(), stdout); });
    } else {
      print_all(format_run(session.sink().record(), in.format, in.table));
    }
  };
  const bool several = in.session.allocators.size() > 1;
  int failures = 0;
  try {
    failures =
        session.run([&](const Allocator& allocator) { report_allocator(f, allocator, several, world); });
  } catch (const std::exception&) {
    report();  // the document the session finished as aborted
    throw;
  }
  report();
  if (session.writer() && !f.quiet && in.format == OutputFormat::table) {
    if (!f.wide) {
      note("the table shows each case's headline metric: --wide shows them all, with their spread");
    }
    // One line on where the results are, or how to keep them (the table above is all a run without --out
    // keeps).
    if (f.out.empty()) {
      note("results not kept: add --out FILE.json to keep them (compare, accept --from and report read it)");
    } else {
      note("results: {} (and its stream, {})", f.out, ResultSink::stream_path(f.out).string());
    }
  }
  if (f.fail_on_skip && session.writer() &&
      note_skipped_cases(session.sink().record(), "--fail-on-skip") > 0) {
    return 1;
  }
  return failures == 0 ? 0 : 1;
}

int run_command(const RunFlags& f, const std::vector<std::string>& argv) {
  // Everything that can be wrong with the input is found before MPI or the device is touched.
  RunInput in;
  in.format = parse_output_format(f.format, "--format");
  in.table.wide = f.wide;
  PlanRequest request;
  request.names = run_plan_names();
  request.workloads = f.workloads;
  request.full = f.full;
  request.sizes = size_axis(f);
  static_cast<void>(parse_whole_number(f.seed, "--seed"));
  request.in_turn = f.in_turn;
  request.max_cases = f.max_cases;
  for (const std::string& p : f.params) {
    request.overrides.push_back(ParamOverride::parse(p, "-p"));
  }
  const Registry registry = suites::builtin_registry();
  SessionOptions& session = in.session;
  session.cases = plan_cases(registry, request);
  static_cast<void>(DeviceSpec::parse(resolved_device(f), "--device"));
  if (!f.inject_fault.empty()) {
    session.run.fault = FaultInjection::parse(f.inject_fault, "--inject-fault");
  }
  if (!(f.straggler_pct > 0) || f.straggler_pct > 1e6) {
    throw InputError(fmt::format("--straggler-pct {}: expected a percentage, more than 0", f.straggler_pct));
  }

  // --allocator a,b,c runs every case under each allocator in turn, each built fresh.
  AllocatorSpec common;
  common.flags = allocator_flags();
  common.conf = AllocConfig::parse(f.alloc_conf, "--alloc-conf");  // parsed once, and carried
  if (!f.alloc_limit.empty()) {
    common.limit = parse_bytes(f.alloc_limit, "--alloc-limit");
  }
  if (!f.alloc_trace.empty()) {
    common.trace = f.alloc_trace;
  }
  session.allocators = allocator_specs(f.allocator, common);
  const bool several = session.allocators.size() > 1;
  if (several && !f.alloc_trace.empty()) {
    throw InputError("--alloc-trace records one allocator's calls: name a single --allocator with it");
  }
  // Every output is checked before anything runs: a typo is a usage error at once, not after a long run.
  std::vector<NamedOutput> outputs{{"--alloc-trace", f.alloc_trace}, {"--junit", f.junit}};
  if (!f.out.empty()) {
    outputs.push_back({"--out", f.out});
    outputs.push_back({"--out's stream", ResultSink::stream_path(f.out)});
  }
  if (!f.snapshot.empty()) {
    for (const AllocatorSpec& a : session.allocators) {
      outputs.push_back({"--snapshot", path_for_allocator(f.snapshot, a.name, several)});
    }
  }
  check_distinct_outputs(outputs);
  if (!f.junit.empty()) {
    check_output_path(f.junit, "--junit");
  }
  if (!f.snapshot.empty()) {
    for (const AllocatorSpec& a : session.allocators) {
      check_output_path(path_for_allocator(f.snapshot, a.name, several), "--snapshot");
    }
  }
  const std::size_t planned = session.cases.size() * session.allocators.size();
  if (planned > f.max_cases) {
    throw InputError(
        fmt::format("the plan has {} cases (workloads x axes x allocators), more than --max-cases {}; "
                    "narrow the axes, or raise --max-cases if you mean it",
                    planned, f.max_cases));
  }
  session.argv = argv;
  session.config = config_json(f, request);
  session.straggler_threshold = f.straggler_pct / 100.0;
  if (!f.out.empty()) {
    session.out = f.out;
    session.out_what = "--out";
  }
  session.run.repetitions = f.repetitions;
  session.run.warmup = f.warmup;
  session.run.seed = parse_whole_number(f.seed, "--seed");
  session.run.quiet = f.quiet;
  session.progress = f.progress;
  session.pageable_host = f.host_memory == "pageable";
  session.numa = parse_numa_mode(f.numa, "--numa");
  session.interrupted = [&f](const RunRecord& record, int /*signal*/, const std::string& why) {
    write_junit(f, record);
    note("{}{}", why, f.out.empty() ? std::string() : fmt::format("; the results so far are in {}", f.out));
  };

  // Before MPI, CUDA or any thread exists (Note [Interrupted runs]).
  InterruptWatch interrupts;
  // After an error in a job of several ranks, rank 0 has already finished the results document as aborted.
  return run_as_job(f.timeout_s, "--timeout",
                    [&](World& world) { return run_ranks(f, in, world, interrupts); });
}

}  // namespace

Subcommand add_run(CLI::App& app, std::vector<std::string> argv) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* sub = app.add_subcommand("run", "Run workloads (the default job when none is named)");
  add_run_flags(*sub, *flags);
  return {sub, [flags, argv = std::move(argv)] {
            flags->alloc_conf = resolved_alloc_conf(flags->alloc_conf);
            if (const char* env = std::getenv("MEMSTRESS_REQUIRE_GPU")) {  // NOLINT(concurrency-mt-unsafe)
              if (!flags->require_gpu && std::string_view(env) == "1") {
                flags->require_gpu = true;
                flags->require_gpu_env = true;
              }
            }
            return run_command(*flags, argv);
          }};
}

}  // namespace memstress::app
