// memstress run [WORKLOAD...]: plans the cases, runs them on one device through one shared allocator,
// streams rows to --out as they finish, and prints the results on stdout. Under mpirun every rank runs
// every case on its own GPU; rank 0 gathers the rows into the one results file and alone prints them.
// A rank that fails or hangs ends the job (exit 1) by the --timeout, the results so far kept.

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>

#include "apps/commands.hpp"
#include "harness/alloc/factory.hpp"
#include "harness/alloc/pinned_host_allocator.hpp"
#include "harness/alloc/plugin_allocator.hpp"
#include "harness/core/atomic_file.hpp"
#include "harness/core/error.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/json_text.hpp"
#include "harness/core/log.hpp"
#include "harness/core/units.hpp"
#include "harness/core/version.hpp"
#include "harness/dist/job.hpp"
#include "harness/dist/nccl_comm.hpp"
#include "harness/dist/rank_setup.hpp"
#include "harness/env/environment.hpp"
#include "harness/env/health.hpp"
#include "harness/memory/backend.hpp"
#include "harness/memory/device_spec.hpp"
#include "harness/run/format.hpp"
#include "harness/run/junit.hpp"
#include "harness/run/plan.hpp"
#include "harness/run/progress.hpp"
#include "harness/run/runner.hpp"
#include "harness/run/sink.hpp"
#include "harness/stats/memory_summary.hpp"
#include "suites/registry.hpp"

namespace memstress::app {
namespace {

struct RunFlags {
  std::vector<std::string> workloads;
  std::vector<std::string> params;
  std::string minbytes, maxbytes, stepbytes;
  double stepfactor = 2.0;
  std::string device = "auto";
  std::string allocator = "caching";
  std::string alloc_conf;
  std::string alloc_limit;
  std::string alloc_trace;
  std::string snapshot;
  bool memory_summary = false;
  std::string format = "table";
  bool wide = false;
  std::string progress = "auto";
  std::string out;
  int repetitions = 5;
  int warmup = 1;
  std::string seed = "1";
  bool full = false;
  bool quiet = false;
  std::string junit;
  double timeout_s = 300;
  double straggler_pct = kDefaultStragglerThreshold * 100.0;
  std::string inject_fault;
  std::string host_memory = "pinned";
  std::vector<std::string> in_turn;
  std::size_t max_cases = kDefaultMaxCases;
  bool require_gpu = false;      // --require-gpu, or MEMSTRESS_REQUIRE_GPU=1 (then require_gpu_env too)
  bool require_gpu_env = false;  // from MEMSTRESS_REQUIRE_GPU alone: an explicit --device sim still wins
  bool fail_on_skip = false;
};

// GPU CI (Note in README "In GPU CI"): --require-gpu makes `auto` mean `cuda`, so a machine without a usable
// GPU exits 3 instead of falling back to the simulated device and skipping every GPU case.
std::string resolved_device(const RunFlags& f) {
  if (!f.require_gpu) {
    return f.device;
  }
  const DeviceSpec spec = DeviceSpec::parse(f.device);
  if (spec.kind == DeviceSpec::Kind::sim && f.require_gpu_env) {
    return f.device;  // asked for by name in a job that exports MEMSTRESS_REQUIRE_GPU=1 (its CPU tests)
  }
  if (spec.kind == DeviceSpec::Kind::sim) {
    throw InputError(fmt::format("--require-gpu with --device {}: the simulated device is no GPU", f.device));
  }
  return spec.kind == DeviceSpec::Kind::automatic ? "cuda" : f.device;
}

// --fail-on-skip: a skipped case fails the run (exit 1), each named with its reason (the first few).
int skipped_cases(const RunRecord& run) {
  constexpr int kNamed = 5;
  int skipped = 0;
  for (const Row& row : run.rows) {
    if (row.verdict != Verdict::skip) {
      continue;
    }
    if (++skipped <= kNamed) {
      note("--fail-on-skip: skipped: {} {} [{}]: {}", row.workload, row.case_label(), row.allocator,
           row.reason);
    }
  }
  if (skipped > 0) {
    note("--fail-on-skip: {} case(s) skipped: the run fails", skipped);
  }
  return skipped;
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
                    f.stepfactor, increment, f.max_cases);
}

// --seed: a whole number from 0 to 2^64 - 1, written in decimal digits (no sign, fraction or exponent: a
// seed that does not fit is a usage error, never a silently different seed).
std::uint64_t parse_seed(const std::string& text) {
  std::uint64_t seed = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, seed);
  const bool digits =
      !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || ec != std::errc{} || ptr != end) {
    throw InputError(fmt::format("--seed '{}': expected a whole number from 0 to {}", text,
                                 std::numeric_limits<std::uint64_t>::max()));
  }
  return seed;
}

nlohmann::json config_json(const RunFlags& f, const DeviceBackend& backend, const PlanRequest& request) {
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
          {"device_label", backend.info().label()},
          {"allocator", f.allocator},
          {"host_memory", f.host_memory},
          {"repetitions", f.repetitions},
          {"warmup", f.warmup},
          {"seed", parse_seed(f.seed)},
          {"full", f.full},
          {"timeout_s", f.timeout_s},
          {"straggler_pct", f.straggler_pct},
          {"in_turn", f.in_turn}};
}

// --memory-summary (stderr, so stdout stays parseable) and --snapshot, after the run.
// With several allocators, each snapshot goes to FILE with the allocator's name before the extension.
void write_junit(const RunFlags& f, const RunRecord& record) {
  if (!f.junit.empty()) {
    write_file_atomically(f.junit, format_junit(record), "--junit");
  }
}

// In a job of several ranks, each rank but 0 writes FILE with ".rankN" before the extension.
std::filesystem::path rank_path(const std::filesystem::path& path, const World& world) {
  if (world.rank() == 0) {
    return path;
  }
  std::filesystem::path p = path;
  return p.replace_extension(fmt::format(".rank{}{}", world.rank(), path.extension().string()));
}

std::filesystem::path snapshot_path(const RunFlags& f, std::string_view allocator, bool several) {
  std::filesystem::path path = f.snapshot;
  if (several) {
    // A plugin by its library's name: "plugin:/opt/lib/liba.so" (the flag) and "plugin:liba.so" (the peer's
    // name) are both "plugin-liba", with no directory in the file name.
    const std::string label = allocator.starts_with("plugin:")
                                  ? "plugin-" + std::filesystem::path(allocator.substr(7)).stem().string()
                                  : std::string(allocator);
    path.replace_extension(fmt::format(".{}{}", label, path.extension().string()));
  }
  return path;
}

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
    write_file_atomically(rank_path(snapshot_path(f, allocator.name(), several), world),
                          json_text(snap, 1) + "\n", "--snapshot");
  }
}

// What run_command resolved from the flags before anything was touched.
struct RunInput {
  OutputFormat format = OutputFormat::table;
  TableOptions table;
  PlanRequest request;
  std::vector<PlannedCase> cases;
  std::vector<AllocatorSpec> allocators;
  std::optional<FaultInjection> fault;
};

// Runs the planned cases on this rank; rank 0 writes the results and prints them.
int run_ranks(const RunFlags& f, const std::vector<std::string>& argv, const RunInput& in, World& world,
              InterruptWatch& interrupts) {
  const std::unique_ptr<DeviceBackend> backend = [&] {
    try {
      return make_backend(rank_device(resolved_device(f), world));
    } catch (const EnvironmentError& e) {
      if (f.require_gpu) {
        throw EnvironmentError(fmt::format("--require-gpu: {}", e.what()));
      }
      throw;
    }
  }();

  RunRecord header;
  const VersionInfo version = version_info();
  header.tool_version = version.version;
  header.git_sha = version.git_sha;
  header.argv = argv;
  header.started_at = utc_now_iso8601();
  header.config = config_json(f, *backend, in.request);
  header.config["ranks"] = world.size();
  header.ranks = world.size();
  header.straggler_threshold = f.straggler_pct / 100.0;
  header.environment = gather_environment(world, to_json(collect_environment()), *backend);
  // From the start of the run, before NCCL sets up: XID events and throttle time are counted from here (the
  // `health` workload).
  const std::unique_ptr<HealthWatch> health =
      run_health_watch(backend->info().kind == BackendKind::cuda, backend->info().uuid);
  const std::unique_ptr<NcclComm> nccl = make_nccl(world, *backend);

  const bool writer = world.rank() == 0;  // the one results file, the table, the JUnit file
  std::optional<std::filesystem::path> out;
  if (!f.out.empty() && writer) {
    out = f.out;
  }
  ResultSink sink(std::move(header), out);
  RunOptions options;
  options.repetitions = f.repetitions;
  options.warmup = f.warmup;
  options.seed = parse_seed(f.seed);
  options.quiet = f.quiet || !writer;
  options.world = &world;
  options.nccl = nccl.get();
  options.health = health.get();
  options.fault = in.fault;
  ProgressOptions shown;
  shown.total = in.cases.size() * in.allocators.size();
  shown.quiet = options.quiet;
  shown.live = f.progress == "always" || (f.progress == "auto" && isatty(fileno(stderr)) != 0);
  shown.name_allocator = in.allocators.size() > 1;
  shown.columns = terminal_columns();
  Progress progress(std::move(shown));
  options.progress = &progress;
  // One pinned host cache for the whole run, as a process has one: page-locked memory on a GPU.
  // --host-memory pageable backs it with plain memory: a job that never pins, with the same cases.
  PinnedHostAllocator host(make_host_memory_source(
      backend->info().kind == BackendKind::cuda && f.host_memory == "pinned" ? "cuda" : "plain"));
  const auto report = [&] {
    if (!writer) {
      return;
    }
    write_junit(f, sink.record());
    if (in.format == OutputFormat::json) {
      sink.write_document([](std::string_view piece) { std::fwrite(piece.data(), 1, piece.size(), stdout); });
    } else {
      print_all(format_run(sink.record(), in.format, in.table));
    }
  };
  // SIGINT/SIGTERM/SIGHUP: the finished rows become an aborted document, and JUnit, before the process ends.
  const InterruptWatch::Handler on_signal = interrupts.on_interrupt([&](int signal) {
    const std::string why =
        fmt::format("interrupted by {} after {} finished row(s)", signal_name(signal), sink.rows());
    if (sink.finish(RunStatus::aborted, why) && writer) {
      write_junit(f, sink.record());
      note("{}{}", why, f.out.empty() ? std::string() : fmt::format("; the results so far are in {}", f.out));
    }
  });
  int failures = 0;
  try {
    for (AllocatorSpec a : in.allocators) {
      if (a.trace) {
        a.trace = rank_path(*a.trace, world);
      }
      const std::unique_ptr<Allocator> allocator = make_allocator(a, *backend);
      failures += Runner(*allocator, options, &host).run(in.cases, sink);
      report_allocator(f, *allocator, in.allocators.size() > 1, world);
    }
  } catch (const std::exception& e) {
    // Keep what finished: the final document says the run was aborted and why.
    sink.finish(RunStatus::aborted, e.what());
    report();
    throw;
  }
  sink.finish(RunStatus::complete);
  report();
  if (writer && !f.quiet && in.format == OutputFormat::table) {
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
  if (f.fail_on_skip && writer && skipped_cases(sink.record()) > 0) {
    return 1;
  }
  return failures == 0 ? 0 : 1;
}

int run_command(const RunFlags& f, const std::vector<std::string>& argv) {
  // Everything that can be wrong with the input is found before MPI or the device is touched.
  RunInput in;
  in.format = parse_output_format(f.format, "--format");
  in.table.wide = f.wide;
  in.request.workloads = f.workloads;
  in.request.full = f.full;
  in.request.sizes = size_axis(f);
  static_cast<void>(parse_seed(f.seed));
  in.request.in_turn = f.in_turn;
  in.request.max_cases = f.max_cases;
  for (const std::string& p : f.params) {
    in.request.overrides.push_back(ParamOverride::parse(p));
  }
  const Registry registry = suites::builtin_registry();
  in.cases = plan_cases(registry, in.request);
  for (const auto& workload : registry.all()) {
    in.table.headline[std::string(workload->name())] = workload->headline();
  }
  static_cast<void>(DeviceSpec::parse(resolved_device(f)));
  if (!f.inject_fault.empty()) {
    in.fault = FaultInjection::parse(f.inject_fault);
  }
  if (!(f.straggler_pct > 0) || f.straggler_pct > 1e6) {
    throw InputError(fmt::format("--straggler-pct {}: expected a percentage, more than 0", f.straggler_pct));
  }

  // --allocator a,b,c runs every case under each allocator in turn, each built fresh.
  std::optional<std::uint64_t> limit;
  if (!f.alloc_limit.empty()) {
    limit = parse_bytes(f.alloc_limit, "--alloc-limit");
  }
  for (std::string_view rest = f.allocator; !rest.empty();) {
    const std::size_t comma = rest.find(',');
    AllocatorSpec a;
    a.name = std::string(rest.substr(0, comma));
    a.conf = f.alloc_conf;
    a.limit = limit;
    if (!f.alloc_trace.empty()) {
      a.trace = f.alloc_trace;
    }
    validate(a);
    in.allocators.push_back(std::move(a));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  if (in.allocators.empty()) {
    throw InputError("--allocator: name at least one allocator");
  }
  // Rows and snapshots name a plugin by its file: two libraries of one file name could not be told apart.
  std::map<std::string, std::string, std::less<>> reported;  // reported name -> the spec given
  for (const AllocatorSpec& a : in.allocators) {
    const std::string name = is_plugin_name(a.name) ? plugin_peer_name(parse_plugin_name(a.name)) : a.name;
    if (const auto [it, added] = reported.emplace(name, a.name); !added && it->second != a.name) {
      throw InputError(
          fmt::format("--allocator: {} and {} would both be reported as {}; give them different "
                      "file names",
                      it->second, a.name, name));
    }
  }
  if (in.allocators.size() > 1 && !f.alloc_trace.empty()) {
    throw InputError("--alloc-trace records one allocator's calls: name a single --allocator with it");
  }
  // Every output is checked before anything runs: a typo is a usage error at once, not after a long run.
  std::vector<NamedOutput> outputs{{"--alloc-trace", f.alloc_trace}, {"--junit", f.junit}};
  if (!f.out.empty()) {
    outputs.push_back({"--out", f.out});
    outputs.push_back({"--out's stream", ResultSink::stream_path(f.out)});
  }
  if (!f.snapshot.empty()) {
    for (const AllocatorSpec& a : in.allocators) {
      outputs.push_back({"--snapshot", snapshot_path(f, a.name, in.allocators.size() > 1)});
    }
  }
  check_distinct_outputs(outputs);
  if (!f.junit.empty()) {
    check_output_path(f.junit, "--junit");
  }
  if (!f.snapshot.empty()) {
    for (const AllocatorSpec& a : in.allocators) {
      check_output_path(snapshot_path(f, a.name, in.allocators.size() > 1), "--snapshot");
    }
  }
  const std::size_t planned = in.cases.size() * in.allocators.size();
  if (planned > f.max_cases) {
    throw InputError(
        fmt::format("the plan has {} cases (workloads x axes x allocators), more than --max-cases {}; "
                    "narrow the axes, or raise --max-cases if you mean it",
                    planned, f.max_cases));
  }

  // Before MPI, CUDA or any thread exists (Note [Interrupted runs]).
  InterruptWatch interrupts;
  // After an error in a job of several ranks, rank 0 has already finished the results document as aborted.
  return run_as_job(f.timeout_s, "--timeout",
                    [&](World& world) { return run_ranks(f, argv, in, world, interrupts); });
}

}  // namespace

Subcommand add_run(CLI::App& app, std::vector<std::string> argv) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* sub = app.add_subcommand("run", "Run workloads (the default job when none is named)");
  sub->add_option("workloads", flags->workloads, "Workloads to run (see `memstress list`)");
  sub->add_option("-p,--param", flags->params,
                  "Set an axis: [WORKLOAD.]NAME=VALUE[,VALUE...]; repeat for more axes")
      ->allow_extra_args(false);
  sub->add_option("-b,--minbytes", flags->minbytes, "Sweep the bytes axis from this size (K/M/G suffixes)");
  sub->add_option("-e,--maxbytes", flags->maxbytes, "…to this size, inclusive");
  sub->add_option("-f,--stepfactor", flags->stepfactor, "…multiplying by this factor (default 2)");
  sub->add_option("-i,--stepbytes", flags->stepbytes, "…or adding this many bytes instead");
  sub->add_option("-d,--device", flags->device, "auto, cuda, cuda:N, sim or sim:CAPACITY (e.g. sim:80GiB)")
      ->capture_default_str();
  sub->add_flag("--require-gpu", flags->require_gpu,
                "GPU CI: no usable GPU is exit 3, never the simulated device (`auto` means `cuda`); also "
                "MEMSTRESS_REQUIRE_GPU=1");
  sub->add_flag("--fail-on-skip", flags->fail_on_skip,
                "GPU CI: any skipped case fails the run (exit 1), each named with its reason");
  sub->add_option(
         "-a,--allocator", flags->allocator,
         "The shared allocator: caching (PyTorch's rules), expandable, direct (cudaMalloc), async "
         "(cudaMallocAsync), the RMM peers where built (memstress list), or plugin:PATH.so (a "
         "library of the C allocator interface); several, comma-separated, run every case under each")
      ->capture_default_str();
  sub->add_option(
      "--alloc-conf", flags->alloc_conf,
      "Allocator settings in PyTorch's syntax, e.g. max_split_size_mb:128,expandable_segments:True "
      "(default: $MEMSTRESS_ALLOC_CONF)");
  sub->add_option("--alloc-limit", flags->alloc_limit,
                  "Cap the bytes allocated through the allocator (e.g. 40G)");
  sub->add_option("--alloc-trace", flags->alloc_trace, "Write every allocation and free to this trace file")
      ->check(a_path());
  sub->add_flag("--memory-summary", flags->memory_summary,
                "Print the allocator's memory summary after the run");
  sub->add_option("--snapshot", flags->snapshot, "Write the allocator's memory snapshot (JSON) after the run")
      ->check(a_path());
  sub->add_option("-n,--repetitions", flags->repetitions, "Timed repetitions per case")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  sub->add_option("-w,--warmup", flags->warmup, "Untimed repetitions before them")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  sub->add_option("--seed", flags->seed, "Seed for data patterns and random choices (0 to 2^64 - 1)")
      ->type_name("UINT")
      ->capture_default_str();
  sub->add_option("--format", flags->format,
                  "stdout format: table, json, csv or openmetrics (Prometheus; node_exporter's textfile "
                  "collector: write it to a .prom file)")
      ->check(CLI::IsMember({"table", "json", "csv", "openmetrics"}))
      ->capture_default_str();
  sub->add_flag(
      "--wide", flags->wide,
      "The table for a closer look: every metric with N, median, p10, p90 and CV, every parameter, the "
      "device, whole notes (by default: each case's headline metric, the parameters that vary)");
  sub->add_option(
         "--progress", flags->progress,
         "The live progress line on stderr, redrawn every second while a case runs: auto (when stderr "
         "is a terminal), always, never (the line after each case is written either way; -q: none)")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  sub->add_option("-o,--out", flags->out,
                  "Write the results document here (rows stream to the same name with .jsonl as they finish)")
      ->check(a_path());
  sub->add_option("--max-cases", flags->max_cases,
                  "Refuse a plan of more cases than this (workloads x axes x allocators)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{100'000'000}))
      ->capture_default_str();
  sub->add_flag("--full", flags->full, "The long version of each workload's axes");
  sub->add_flag("-q,--quiet", flags->quiet, "No per-case progress on stderr");
  sub->add_option("--junit", flags->junit, "Also write the results as JUnit XML to FILE (for CI systems)")
      ->check(a_path());
  sub->add_option(
         "--timeout", flags->timeout_s,
         "Under mpirun: seconds a rank waits for the others at a step (a case, a rank's turn, an NCCL "
         "wait) before the job ends, exit 1")
      ->capture_default_str();
  sub->add_option("--straggler-pct", flags->straggler_pct,
                  "Under mpirun: a rank worse than the median across ranks by more than this is a straggler")
      ->capture_default_str();
  sub->add_option(
         "--in-turn", flags->in_turn,
         "Under mpirun: these workloads run on one rank at a time, each alone on the node's host "
         "memory and PCIe (e.g. transfers: each GPU's own link, not the contention); the others wait "
         "up to --timeout for each rank's turn")
      ->delimiter(',');
  // For the tests of the distributed harness only: RANK:CASE_INDEX:exit|hang|throw (hidden).
  sub->add_option("--inject-fault", flags->inject_fault, "")->group("");
  sub->add_option(
         "--host-memory", flags->host_memory,
         "What the shared pinned host cache hands out: pinned (page-locked, the default) or pageable "
         "(plain memory: what-if runs, and a deliberately slowed run for `compare`)")
      ->check(CLI::IsMember({"pinned", "pageable"}))
      ->capture_default_str();
  return {sub, [flags, argv = std::move(argv)] {
            if (flags->alloc_conf.empty()) {
              if (const char* env = std::getenv("MEMSTRESS_ALLOC_CONF")) {  // NOLINT(concurrency-mt-unsafe)
                flags->alloc_conf = env;
              }
            }
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
