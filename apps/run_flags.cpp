#include "apps/run_flags.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "apps/commands.hpp"
#include "harness/alloc/factory.hpp"

namespace memstress::app {

void add_run_flags(CLI::App& sub, RunFlags& flags) {
  sub.add_option("workloads", flags.workloads, "Workloads to run (see `memstress list`)");
  sub.add_option("-p,--param", flags.params,
                 "Set an axis: [WORKLOAD.]NAME=VALUE[,VALUE...]; repeat for more axes")
      ->allow_extra_args(false);
  sub.add_option("-b,--minbytes", flags.minbytes, "Sweep the bytes axis from this size (K/M/G suffixes)");
  sub.add_option("-e,--maxbytes", flags.maxbytes, "…to this size, inclusive");
  sub.add_option("-f,--stepfactor", flags.stepfactor, "…multiplying by this factor (default 2)");
  sub.add_option("-i,--stepbytes", flags.stepbytes, "…or adding this many bytes instead");
  sub.add_option("-d,--device", flags.device, "auto, cuda, cuda:N, sim or sim:CAPACITY (e.g. sim:80GiB)")
      ->capture_default_str();
  sub.add_flag("--require-gpu", flags.require_gpu,
               "GPU CI: no usable GPU is exit 3, never the simulated device (`auto` means `cuda`); also "
               "MEMSTRESS_REQUIRE_GPU=1");
  sub.add_flag("--fail-on-skip", flags.fail_on_skip,
               "GPU CI: any skipped case fails the run (exit 1), each named with its reason");
  sub.add_option(
         "-a,--allocator", flags.allocator,
         fmt::format(
             "The shared allocator: {}, or {} (a library of the C allocator interface; memstress list "
             "says what each is); several, comma-separated, run every case under each",
             fmt::join(allocator_names(), ", "), kPluginForm))
      ->capture_default_str();
  sub.add_option(
      "--alloc-conf", flags.alloc_conf,
      "Allocator settings in PyTorch's syntax, e.g. max_split_size_mb:128,expandable_segments:True "
      "(default: $MEMSTRESS_ALLOC_CONF)");
  sub.add_option("--alloc-limit", flags.alloc_limit,
                 "Cap the bytes allocated through the allocator (e.g. 40G)");
  sub.add_option("--alloc-trace", flags.alloc_trace, "Write every allocation and free to this trace file")
      ->check(a_path());
  sub.add_flag("--memory-summary", flags.memory_summary,
               "Print the allocator's memory summary after the run");
  sub.add_option("--snapshot", flags.snapshot, "Write the allocator's memory snapshot (JSON) after the run")
      ->check(a_path());
  sub.add_option("-n,--repetitions", flags.repetitions, "Timed repetitions per case")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  sub.add_option("-w,--warmup", flags.warmup, "Untimed repetitions before them")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  sub.add_option("--seed", flags.seed, "Seed for data patterns and random choices (0 to 2^64 - 1)")
      ->type_name("UINT")
      ->capture_default_str();
  sub.add_option("--format", flags.format,
                 "stdout format: table, json, csv or openmetrics (Prometheus; node_exporter's textfile "
                 "collector: write it to a .prom file)")
      ->check(CLI::IsMember({"table", "json", "csv", "openmetrics"}))
      ->capture_default_str();
  sub.add_flag(
      "--wide", flags.wide,
      "The table for a closer look: every metric with N, median, p10, p90 and CV, every parameter, the "
      "device, whole notes (by default: each case's headline metric, the parameters that vary)");
  sub.add_option(
         "--progress", flags.progress,
         "The live progress line on stderr, redrawn every second while a case runs: auto (when stderr "
         "is a terminal), always, never (the line after each case is written either way; -q: none)")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  sub.add_option("-o,--out", flags.out,
                 "Write the results document here (rows stream to the same name with .jsonl as they finish)")
      ->check(a_path());
  sub.add_option("--max-cases", flags.max_cases,
                 "Refuse a plan of more cases than this (workloads x axes x allocators)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{100'000'000}))
      ->capture_default_str();
  sub.add_flag("--full", flags.full, "The long version of each workload's axes");
  sub.add_flag("-q,--quiet", flags.quiet, "No per-case progress on stderr");
  sub.add_option("--junit", flags.junit, "Also write the results as JUnit XML to FILE (for CI systems)")
      ->check(a_path());
  sub.add_option(
         "--timeout", flags.timeout_s,
         "Under mpirun: seconds a rank waits for the others at a step (a case, a rank's turn, an NCCL "
         "wait) before the job ends, exit 1")
      ->capture_default_str();
  sub.add_option("--straggler-pct", flags.straggler_pct,
                 "Under mpirun: a rank worse than the median across ranks by more than this is a straggler")
      ->capture_default_str();
  sub.add_option(
         "--in-turn", flags.in_turn,
         "Under mpirun: these workloads run on one rank of each node at a time (turns by local rank), "
         "each alone on its node's host memory and PCIe (e.g. transfers: each GPU's own link, not the "
         "contention); the others wait "
         "up to --timeout for each rank's turn")
      ->delimiter(',');
  // For the tests of the distributed harness only: RANK:CASE_INDEX:exit|hang|throw (hidden).
  sub.add_option("--inject-fault", flags.inject_fault, "")->group("");
  sub.add_option("--host-memory", flags.host_memory,
                 "What the shared pinned host cache hands out: pinned (page-locked, the default) or pageable "
                 "(plain memory: what-if runs, and a deliberately slowed run for `compare`)")
      ->check(CLI::IsMember({"pinned", "pageable"}))
      ->capture_default_str();
  sub.add_option("--numa", flags.numa,
                 "Where each rank's host memory goes: local (preferred on the NUMA node its GPU is attached "
                 "to, found by hwloc; the default) or off (where the OS puts it). The placement and the "
                 "rank's CPUs are recorded in the results' environment")
      ->check(CLI::IsMember({"local", "off"}))
      ->capture_default_str();
}

}  // namespace memstress::app
