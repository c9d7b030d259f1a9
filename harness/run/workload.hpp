#pragma once

// A workload declares a name, its parameter axes and what it needs; for each case the harness calls
// prepare() once and then iteration() for every warm-up and timed repetition, and finish() at the end.
// The harness owns sweeps, warm-up, repetition, statistics, OOM and error handling, skipping and output:
// a workload only does the work, records samples and counts what it verified.

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "harness/run/params.hpp"

namespace memstress {

class CaseContext;

// Thrown while a case prepares, for a reason only known at run time (this rank does not take part, fewer
// GPUs than the case needs): the harness records the case as skipped with this reason, not as an error.
class SkipCase : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Requirements {
  bool real_gpu = false;  // needs memory behind device addresses (kernels, copies)
  int min_ranks = 1;
  bool all_ranks = false;  // its ranks work together (NCCL): it cannot run one rank at a time
};

// One case's state, alive from prepare to finish (buffers, streams): RAII frees it all.
class CaseRun {
 public:
  virtual ~CaseRun() = default;
  CaseRun() = default;
  CaseRun(const CaseRun&) = delete;
  CaseRun& operator=(const CaseRun&) = delete;
  CaseRun(CaseRun&&) = delete;
  CaseRun& operator=(CaseRun&&) = delete;

  // One repetition. Records samples with ctx.record (ignored during warm-up) and verification counts
  // with ctx.verified (always counted: a data error in warm-up is still an error).
  virtual void iteration(CaseContext& ctx) = 0;
  // After the last repetition: end-of-case metrics (peaks, totals).
  virtual void finish(CaseContext& /*ctx*/) {}
};

class Workload {
 public:
  virtual ~Workload() = default;
  Workload() = default;
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;
  Workload(Workload&&) = delete;
  Workload& operator=(Workload&&) = delete;

  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  [[nodiscard]] virtual std::string_view summary() const noexcept = 0;
  [[nodiscard]] virtual std::vector<ParamSpec> params() const = 0;
  [[nodiscard]] virtual Requirements requirements() const noexcept { return {}; }
  // At most this many repetitions, and no warm-up, whatever -n and -w say (0: no limit). For workloads
  // whose answer is a search result (an OOM threshold): repeating the search costs minutes and says the same.
  [[nodiscard]] virtual int max_repetitions() const noexcept { return 0; }
  // Part of the default job (`memstress run` with no workload named)?
  [[nodiscard]] virtual bool in_default_job() const noexcept { return true; }
  // Does a case measure bandwidth? Then, where the run watches the GPU's health, its row also gets the time
  // the clocks were held down while it ran (Note [Clocks during a bandwidth case], case_clocks.hpp).
  [[nodiscard]] virtual bool measures_bandwidth() const noexcept { return false; }

  // The metric the run table shows for a case (Note [The run table], harness/run/table.hpp), in order of
  // preference: the first of these the case recorded. Empty: its first metric.
  [[nodiscard]] virtual std::vector<std::string> headline() const { return {}; }

  // Whether a case is a self-test: it plants a fault for the harness to find, so its pass says that a
  // detector works, not that the device or allocator is healthy. Then what its pass means, in a few words
  // ("planted leak found": the table prints "self-test: planted leak found", the JSON row has it as
  // self_test); empty for a measurement.
  [[nodiscard]] virtual std::string self_test(const ParamSet& /*params*/) const { return {}; }

  // Whether a combination of axis values is a case at all (e.g. `host=pageable` means nothing for a
  // device-to-device copy). Combinations that do not apply are left out of the plan, not skipped.
  [[nodiscard]] virtual bool applies(const ParamSet& /*params*/) const { return true; }

  // Checks values that must go together (one axis against another: min_bytes at most max_bytes) when the
  // plan is made, so a bad combination is a usage error (exit 2) before anything runs, not an error row.
  // Throws InputError naming the axes and their values. Each axis alone is already within its bounds.
  virtual void validate(const ParamSet& /*params*/) const {}

  [[nodiscard]] virtual std::unique_ptr<CaseRun> prepare(CaseContext& ctx) const = 0;
};

}  // namespace memstress
