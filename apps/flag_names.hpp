#pragma once

// The flags that several commands share, as they name them to the libraries (a library names no flag of its
// own: its errors name what the command passes). One spelling for run, accept, replay, doctor and
// predict-batch.

#include <string>
#include <vector>

#include "harness/alloc/allocator_flags.hpp"
#include "harness/core/units.hpp"
#include "harness/doctor/flags.hpp"
#include "harness/run/plan.hpp"

namespace memstress::app {

// The flags that give an allocator.
inline AllocatorFlags allocator_flags() {
  return {.name = "--allocator", .conf = "--alloc-conf", .trace = "--alloc-trace", .device = "--device"};
}

// The flags of doctor and predict-batch (the two spell --capacity, --alloc-conf, --trace-device and --batch
// alike).
inline doctor::DoctorFlags doctor_flags() {
  return {.capacity = "--capacity",
          .alloc_conf = "--alloc-conf",
          .trace_device = "--trace-device",
          .batch = "--batch",
          .batch_runs = "--batch-runs",
          .allocator = "--allocator",
          .max_batch = "--max-batch",
          .multiprocessors = "--multiprocessors"};
}

// run's flags that say where its results went, not how it measured (compare leaves them out of the options
// two runs are compared by): those that take a value, and the switches.
inline std::vector<std::string> run_output_options() {
  return {"--out",         "-o",         "--junit",   "--csv", "--format", "--progress",
          "--alloc-trace", "--snapshot", "--timeline"};
}
inline std::vector<std::string> run_output_switches() {
  return {"-q"};
}

// The flags that give a plan's inputs (accept's runs are named so too).
inline PlanInputNames run_plan_names() {
  return {.overrides = "-p", .sizes = "-b/-e/-f", .in_turn = "--in-turn", .max_cases = "--max-cases"};
}

// The flags of -b/-e/-f's size sweep.
inline SizeSweepNames run_sweep_names() {
  return {.begin = "-b/--minbytes",
          .end = "-e/--maxbytes",
          .factor = "-f/--stepfactor",
          .sweep = "-b/-e/-f",
          .limit = "--max-cases"};
}

}  // namespace memstress::app
