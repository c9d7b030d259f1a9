#pragma once

// A workload is a definition (WorkloadDef: a name, its parameter axes, what it needs and reports); for each
// case the harness calls prepare() once and then iteration() for every warm-up and timed repetition, and
// finish() at the end.
// The harness owns sweeps, warm-up, repetition, statistics, OOM and error handling, skipping and output:
// a workload only does the work, records samples and counts what it verified.

#include <functional>
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
  // What else it needs or how it behaves without it, in words (`memstress list`, docs/run.md's table):
  // "and an NCCL communicator under `mpirun`". Empty: nothing more to say.
  std::string more{};
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

// Note [A workload in one place]. Everything the harness, `memstress list`, the docs and the report know of a
// workload is its definition, written once at the end of its file, suites/NAME.cpp, with designated
// initialisers (`WorkloadDef workloads::NAME() { return {.name = ..., .summary = ..., .axes = {...},
// .headline = {...}, .prepare = ...}; }`). The workload joins the build and the registry by its file's name
// in MEMSTRESS_WORKLOADS (suites/CMakeLists.txt), the one list. What is kept of it elsewhere is generated
// from `memstress list --format json` by scripts/dev/registry.py (docs/run.md's workload table, the Python
// package's python/memstress/registry_facts.py), and the test scripts.registry fails while they differ;
// docs/development.md shows the whole change of adding one.
struct WorkloadDef {
  std::string name{};
  // What it does and reports, in a sentence or a few: `memstress list` and docs/run.md's table print it.
  std::string summary{};
  Requirements needs{};
  std::vector<ParamSpec> axes{};  // in the order a case's label names them
  // The metric a row of it heads with (Note [The run table], harness/run/table.hpp; the row's "headline"),
  // in order of preference: the first of these the case recorded, else the first metric it recorded.
  std::vector<std::string> headline{};
  // At most this many repetitions, and no warm-up, whatever -n and -w say (0: no limit). For workloads
  // whose answer is a search result (an OOM threshold): repeating the search costs minutes and says the same.
  int max_repetitions = 0;
  bool in_default_job = true;  // part of `memstress run` with no workload named
  // Does a case measure bandwidth? Then, where the run watches the GPU's health, its row also gets the time
  // the clocks were held down while it ran (Note [Clocks during a bandwidth case], case_clocks.hpp).
  bool measures_bandwidth = false;
  // Whether a combination of axis values is a case at all (e.g. `host=pageable` means nothing for a
  // device-to-device copy): those that do not apply are left out of the plan, not skipped. Unset: all apply.
  std::function<bool(const ParamSet&)> applies{};
  // Checks values that must go together (min_bytes at most max_bytes) when the plan is made, so that a bad
  // combination is a usage error (exit 2) before anything runs: throws InputError naming the axes and their
  // values. Each axis alone is already within its bounds. Unset: nothing to check.
  std::function<void(const ParamSet&)> validate{};
  // Whether a case is a self-test: it plants a fault for the harness to find, so its pass says that a
  // detector works, not that the device or allocator is healthy. Then what its pass means, in a few words
  // ("planted leak found": the table prints "self-test: planted leak found", the JSON row has it as
  // self_test); empty for a measurement. Unset: never.
  std::function<std::string(const ParamSet&)> self_test{};
  // The case's state, once per case (SkipCase: skipped with the reason); then iteration() per repetition.
  std::function<std::unique_ptr<CaseRun>(CaseContext&)> prepare{};
};

// A registered workload: its definition, checked once (Registry::add).
class Workload {
 public:
  // Throws std::logic_error for a definition without a name, a summary or prepare, or with two axes of one
  // name (programming errors, caught by the tests).
  explicit Workload(WorkloadDef def);

  [[nodiscard]] std::string_view name() const noexcept { return def_.name; }
  [[nodiscard]] std::string_view summary() const noexcept { return def_.summary; }
  [[nodiscard]] const std::vector<ParamSpec>& params() const noexcept { return def_.axes; }
  [[nodiscard]] const Requirements& requirements() const noexcept { return def_.needs; }
  [[nodiscard]] const std::vector<std::string>& headline() const noexcept { return def_.headline; }
  [[nodiscard]] int max_repetitions() const noexcept { return def_.max_repetitions; }
  [[nodiscard]] bool in_default_job() const noexcept { return def_.in_default_job; }
  [[nodiscard]] bool measures_bandwidth() const noexcept { return def_.measures_bandwidth; }
  [[nodiscard]] bool applies(const ParamSet& params) const { return !def_.applies || def_.applies(params); }
  void validate(const ParamSet& params) const {
    if (def_.validate) {
      def_.validate(params);
    }
  }
  [[nodiscard]] std::string self_test(const ParamSet& params) const {
    return def_.self_test ? def_.self_test(params) : std::string();
  }
  [[nodiscard]] std::unique_ptr<CaseRun> prepare(CaseContext& ctx) const { return def_.prepare(ctx); }

 private:
  WorkloadDef def_;
};

}  // namespace memstress
