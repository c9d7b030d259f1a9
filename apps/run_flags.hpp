#pragma once

// memstress run's flags as the command line gives them (apps/cmd_run.cpp turns them into a session).

#include <CLI/CLI.hpp>
#include <cstddef>
#include <string>
#include <vector>

#include "harness/results/row.hpp"
#include "harness/run/plan.hpp"

namespace memstress::app {

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

// Adds run's options to `sub`, each writing into `flags`.
void add_run_flags(CLI::App& sub, RunFlags& flags);

}  // namespace memstress::app
