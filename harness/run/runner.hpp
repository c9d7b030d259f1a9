#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/run/fault.hpp"
#include "harness/run/plan.hpp"

namespace memstress {

class Allocator;
class HealthWatch;
class NcclComm;
class PinnedHostAllocator;
class World;
class Progress;
class ResultSink;
struct Row;

struct RunOptions {
  int repetitions = 5;  // timed repetitions per case (-n)
  int warmup = 1;       // untimed repetitions first (-w)
  std::uint64_t seed = 1;
  bool quiet = false;  // no per-case progress notes on stderr
  Progress* progress =
      nullptr;               // the run's progress (shared by its allocators); null: one of the runner's own
  World* world = nullptr;    // the run's ranks (null: a world of one)
  NcclComm* nccl = nullptr;  // the communicator over them, for workloads that need one (null: none)
  HealthWatch* health =
      nullptr;  // the GPU's health since the run began, for the `health` workload (null: none)
  std::optional<FaultInjection> fault;  // tests only: --inject-fault
};

// Runs planned cases one after another on one device through one shared allocator and appends a row
// per case to the sink as it finishes. Each case starts with the allocator's cache emptied and its peak
// statistics reset, so what one case leaves cached does not shape the next one's figures. A case that throws
// becomes an `error` row and the run goes on; after an error that leaves the device unusable (a sticky CUDA
// error) the remaining cases are recorded as errors without running. Returns the number of rows whose verdict
// is fail or error.
//
// In a job of several ranks (options.world), every rank runs every case, all at once: the ranks align
// before each case, and after it every rank's row goes to rank 0, which appends them all to its sink
// (the sinks of the other ranks get nothing) and counts their failures. A case planned `in_turn` runs on
// one rank of each node at a time instead, in turns by local rank (Note [Turns by local rank] in
// runner.cpp), each rank alone on what the ranks of its node share (host memory, PCIe switches), so that it
// measures its own GPU's path and not the contention. A rank that does not arrive in
// time makes the run throw DistError naming the rank and the case (harness/run/case_sync.hpp).
class Runner {
 public:
  // `host`: the process's pinned host cache for the cases that stage transfers (null: none).
  Runner(Allocator& allocator, RunOptions options, PinnedHostAllocator* host = nullptr) noexcept
      : allocator_(allocator), options_(options), host_(host) {}

  int run(const std::vector<PlannedCase>& cases, ResultSink& sink);

 private:
  // Runs one case that applies here and fills `row` (verdict, reason, metrics); on an error that leaves
  // the device unusable, names the case in `lost_after`.
  void run_case(const PlannedCase& planned, std::size_t index, const std::string& title, World& world,
                Row& row, std::string& lost_after);

  Allocator& allocator_;
  RunOptions options_;
  PinnedHostAllocator* host_;
};

// The device as a row names it (its node left to the caller).
struct DeviceRef;
class DeviceBackend;
DeviceRef device_ref(const DeviceBackend& backend);

// The seed a case runs with: a hash of the run seed, the workload and the case's parameters.
std::uint64_t case_seed(std::uint64_t run_seed, const PlannedCase& planned) noexcept;

}  // namespace memstress
