// memstress run [WORKLOAD...]: plans the cases, runs them on one device through one shared allocator,
// streams rows to --out as they finish, and prints the results on stdout. Under mpirun every rank runs
// every case on its own GPU; rank 0 gathers the rows into the one results file and alone prints them.
// A rank that fails or hangs ends the job (exit 1) by the --timeout, the results so far kept.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>

#include "apps/commands.hpp"
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
  std::string numa = "local";
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
          {"seed", parse_seed(f.seed)},
          {"full", f.full},
          {"timeout_s", f.timeout_s},
          {"straggler_pct", f.straggler_pct},
          {"in_turn", f.in_turn}};
}

void write_junit(const RunFlags& f, const RunRecord& record) {
  if (!f.junit.empty()) {
    write_file_atomically(f.junit, format_junit(record, f.fail_on_skip), "--junit");
  }
}

// With several allocators, each snapshot goes to FILE with the allocator's name before the extension.
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
    write_file_atomically(rank_path(snapshot_path(f, allocator.name(), several), world),
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
    device = open_rank_device(resolved_device(f), f.require_gpu, world);
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
  if (f.fail_on_skip && session.writer() && skipped_cases(session.sink().record()) > 0) {
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
  request.workloads = f.workloads;
  request.full = f.full;
  request.sizes = size_axis(f);
  static_cast<void>(parse_seed(f.seed));
  request.in_turn = f.in_turn;
  request.max_cases = f.max_cases;
  for (const std::string& p : f.params) {
    request.overrides.push_back(ParamOverride::parse(p));
  }
  const Registry registry = suites::builtin_registry();
  SessionOptions& session = in.session;
  session.cases = plan_cases(registry, request);
  static_cast<void>(DeviceSpec::parse(resolved_device(f)));
  if (!f.inject_fault.empty()) {
    session.run.fault = FaultInjection::parse(f.inject_fault);
  }
  if (!(f.straggler_pct > 0) || f.straggler_pct > 1e6) {
    throw InputError(fmt::format("--straggler-pct {}: expected a percentage, more than 0", f.straggler_pct));
  }

  // --allocator a,b,c runs every case under each allocator in turn, each built fresh.
  AllocatorSpec common;
  common.conf = f.alloc_conf;
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
      outputs.push_back({"--snapshot", snapshot_path(f, a.name, several)});
    }
  }
  check_distinct_outputs(outputs);
  if (!f.junit.empty()) {
    check_output_path(f.junit, "--junit");
  }
  if (!f.snapshot.empty()) {
    for (const AllocatorSpec& a : session.allocators) {
      check_output_path(snapshot_path(f, a.name, several), "--snapshot");
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
  }
  session.run.repetitions = f.repetitions;
  session.run.warmup = f.warmup;
  session.run.seed = parse_seed(f.seed);
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
         fmt::format(
             "The shared allocator: {}, or {} (a library of the C allocator interface; memstress list "
             "says what each is); several, comma-separated, run every case under each",
             fmt::join(allocator_names(), ", "), kPluginForm))
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
         "Under mpirun: these workloads run on one rank of each node at a time (turns by local rank), "
         "each alone on its node's host memory and PCIe (e.g. transfers: each GPU's own link, not the "
         "contention); the others wait "
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
  sub->add_option("--numa", flags->numa,
                  "Where each rank's host memory goes: local (preferred on the NUMA node its GPU is attached "
                  "to, found by hwloc; the default) or off (where the OS puts it). The placement and the "
                  "rank's CPUs are recorded in the results' environment")
      ->check(CLI::IsMember({"local", "off"}))
      ->capture_default_str();
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
