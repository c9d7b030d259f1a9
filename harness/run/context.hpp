#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "harness/results/row.hpp"
#include "harness/run/params.hpp"

namespace memstress {

class Allocator;
class DeviceBackend;
class HealthWatch;
class NcclComm;
class PinnedHostAllocator;
class World;

// What a case sees: its parameters, the shared allocator (and through it the device), a seed, and the
// calls that report samples and verification counts. The harness owns one per case.
class CaseContext {
 public:
  // `host` is the process's pinned host cache, shared by every case; null where the run has none.
  // `world`: the run's ranks (null: a world of one); `nccl`: the communicator over them, on this rank's
  // device (null where there is none: the simulated device).
  CaseContext(ParamSet params, Allocator& allocator, std::uint64_t seed, PinnedHostAllocator* host = nullptr,
              World* world = nullptr, NcclComm* nccl = nullptr) noexcept;
  ~CaseContext();
  CaseContext(const CaseContext&) = delete;
  CaseContext& operator=(const CaseContext&) = delete;
  CaseContext(CaseContext&&) = delete;
  CaseContext& operator=(CaseContext&&) = delete;

  [[nodiscard]] const ParamSet& params() const noexcept { return params_; }
  [[nodiscard]] Allocator& allocator() const noexcept { return allocator_; }
  [[nodiscard]] DeviceBackend& device() const noexcept;
  // The shared pinned host cache (page-locked on a real GPU, plain memory on the simulated device).
  // Throws std::logic_error when the run has none (a harness bug: workloads may rely on it).
  [[nodiscard]] PinnedHostAllocator& host_allocator() const;
  // The run's ranks; a world of one when the run has no other.
  [[nodiscard]] World& world() const noexcept { return *world_; }
  // The NCCL communicator over all ranks, or null (a workload that needs it skips with that reason).
  [[nodiscard]] NcclComm* nccl() const noexcept { return nccl_; }
  // The run's GPU health watch (the `health` workload), or null where the run has none.
  [[nodiscard]] HealthWatch* health() const noexcept { return health_; }
  void set_health(HealthWatch* health) noexcept { health_ = health; }
  // True when every rank of a world of several runs this case at the same moment (not in turn): a
  // workload may then align its timed windows across the ranks (World::spin_barrier), as one that measures
  // every GPU at once must; in turn, or alone, there is no one to wait for.
  [[nodiscard]] bool together() const noexcept { return together_; }
  void set_together(bool together) noexcept { together_ = together; }
  // Derived from the run's --seed and the case's identity: the same case always gets the same seed.
  [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }
  // False during warm-up repetitions.
  [[nodiscard]] bool measuring() const noexcept { return measuring_; }
  // 0-based index of the current repetition, warm-ups included.
  [[nodiscard]] int iteration() const noexcept { return iteration_; }

  // One sample of a metric. The unit and direction of a metric must not change within a case.
  void record(std::string_view metric, std::string_view unit, Better better, double value);
  // `checked` items were compared on the device and `errors` of them were wrong.
  void verified(std::uint64_t checked, std::uint64_t errors) noexcept;
  void note(std::string text);

  // Harness side.
  void begin_iteration(int index, bool measuring) noexcept;
  [[nodiscard]] std::vector<MetricResult> take_metrics();
  [[nodiscard]] std::uint64_t checked() const noexcept { return checked_; }
  [[nodiscard]] std::uint64_t errors() const noexcept { return errors_; }
  [[nodiscard]] std::vector<std::string> take_notes() { return std::move(notes_); }

 private:
  ParamSet params_;
  Allocator& allocator_;
  std::uint64_t seed_;
  PinnedHostAllocator* host_;
  std::unique_ptr<World> own_world_;  // when the run passed none
  World* world_;
  NcclComm* nccl_;
  HealthWatch* health_ = nullptr;
  bool measuring_ = false;
  bool together_ = false;
  int iteration_ = 0;
  std::vector<MetricResult> metrics_;
  std::uint64_t checked_ = 0;
  std::uint64_t errors_ = 0;
  std::vector<std::string> notes_;
};

}  // namespace memstress
