#pragma once

// A run session: what `memstress run` and `memstress accept` set up on each rank of a job around their
// cases (the device, the results' header, the health watch, NCCL, the sink, progress, the pinned host
// cache, the interrupt handler), runs the cases under each allocator in turn, and takes it all down.
//
// Note [Session teardown order]
// The members are made in the order the run needs them and go in the reverse one: the interrupt handler
// first (it touches the sink), then the pinned host cache, progress, the sink, NCCL, the health watch, and
// the device last, after everything that holds memory on it. Each allocator lives only for its own cases.
// The environment is gathered (a collective) before the health watch starts, so that XID events and
// throttle time count from the start of the run, and NCCL sets up before the sink opens --out.

#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/alloc/factory.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/memory/numa.hpp"
#include "harness/results/row.hpp"
#include "harness/run/plan.hpp"
#include "harness/run/runner.hpp"

namespace memstress {

class Allocator;
class DeviceBackend;
class HealthWatch;
class NcclComm;
class PinnedHostAllocator;
class Progress;
class ResultSink;
class World;

// What a session is built from, resolved from the command's flags before anything is touched.
struct SessionOptions {
  std::vector<std::string> argv;  // the command line, for the results' header
  nlohmann::json config;          // the header's config; the session adds "device_label" and "ranks"
  double straggler_threshold = kDefaultStragglerThreshold;
  std::optional<std::filesystem::path> out;  // --out: the results document, written by rank 0 alone
  std::string out_what;                      // the flag that gave `out`, named in its errors
  std::vector<PlannedCase> cases;
  std::vector<AllocatorSpec> allocators;  // every case runs under each in turn, each built fresh
  RunOptions run;                         // repetitions, warm-up, seed, fault; the session sets the rest
  std::string progress = "auto";          // the live progress line: auto (stderr a terminal), always, never
  bool pageable_host = false;             // the pinned host cache hands out plain memory, even on a GPU
  NumaMode numa = NumaMode::local;  // host memory on the GPU's NUMA node (Note [Host memory near the GPU])
  bool row_digests = true;          // false: the sink keeps no digest of a row (ResultSink; a burn)
  // On rank 0, after a signal finished the results as aborted ("interrupted by SIGINT after N finished
  // row(s)", `why`), before the process ends by it.
  std::function<void(const RunRecord& record, int signal, const std::string& why)> interrupted;
};

// What a loop that is not a plan of cases (memstress burn) runs with: the session's parts, alive while it
// runs. Rank 0's sink is the run's results; the other ranks' sinks write nothing (rows reach rank 0 through
// gather_rows, harness/run/case_sync.hpp).
struct SessionParts {
  DeviceBackend& backend;
  World& world;
  HealthWatch* health;  // the GPU's health since the session began; null: none (the simulated device)
  PinnedHostAllocator* host;
  ResultSink& sink;
  Allocator& allocator;  // the options' first allocator, one for the whole loop
};

// The rank's device (as rank_device reads it; `what`: the command's flag that named it), no GPU driven by two
// ranks (check_one_rank_per_gpu). `required_by`: the command's flag that requires a GPU, named where none is
// found ("": none required). Collective.
std::unique_ptr<DeviceBackend> open_rank_device(std::string_view device, std::string_view what,
                                                std::string_view required_by, World& world);

// --fail-on-skip's count: the run's skipped cases, the first few each named with its reason in a note that
// starts with `flag`, and a last line saying the run fails by them.
int note_skipped_cases(const RunRecord& run, std::string_view flag);

class Session {
 public:
  // Collective: every rank of `world` builds its session at the same step.
  Session(SessionOptions options, std::unique_ptr<DeviceBackend> backend, World& world,
          InterruptWatch& interrupts);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  Session(Session&&) = delete;
  Session& operator=(Session&&) = delete;

  // Runs every case under each allocator, calling `after_each` with each allocator after its cases, and
  // finishes the results: complete, or aborted with the error, which is then rethrown (what finished is
  // kept). Returns the number of failed rows (fail or error).
  int run(const std::function<void(const Allocator&)>& after_each = {});

  // Runs `loop` with the session's parts and then finishes the results as run() does: complete, or aborted
  // with the error, which is rethrown (what the loop appended is kept).
  void run_loop(const std::function<void(SessionParts&)>& loop);

  [[nodiscard]] bool writer() const noexcept;  // rank 0: the one results file, the table, the JUnit file
  [[nodiscard]] const DeviceBackend& backend() const noexcept { return *backend_; }
  [[nodiscard]] const ResultSink& sink() const noexcept { return *sink_; }

 private:
  World& world_;
  SessionOptions options_;
  // Note [Session teardown order]: declared in the order they are made.
  std::unique_ptr<DeviceBackend> backend_;
  MemoryPolicyRestore numa_policy_;  // the thread's memory policy before the session placed it, put back last
  std::unique_ptr<HealthWatch> health_;
  std::unique_ptr<NcclComm> nccl_;
  std::unique_ptr<ResultSink> sink_;
  std::unique_ptr<Progress> progress_;
  std::unique_ptr<PinnedHostAllocator> host_;
  std::unique_ptr<InterruptWatch::Handler> on_signal_;
};

}  // namespace memstress
