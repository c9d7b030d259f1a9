#pragma once

// The ranks of a run. Under mpirun each process is one rank and drives one GPU; a process started without
// mpirun is a world of one (SoloWorld). Every member below except the accessors is collective: all ranks
// call it, in the same order. Host-side only; device collectives go through NcclComm.

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace memstress {

class World {
 public:
  virtual ~World() = default;
  World() = default;
  World(const World&) = delete;
  World& operator=(const World&) = delete;
  World(World&&) = delete;
  World& operator=(World&&) = delete;

  [[nodiscard]] virtual int rank() const noexcept = 0;
  [[nodiscard]] virtual int size() const noexcept = 0;
  // Rank among the ranks on this node, and how many share it (the default GPU is the local rank).
  [[nodiscard]] virtual int local_rank() const noexcept = 0;
  [[nodiscard]] virtual int local_size() const noexcept = 0;
  // The node this rank runs on, by name: its host's, or MEMSTRESS_NODE's where set (MpiWorld, Note [Nodes]);
  // empty in a process started without mpirun.
  [[nodiscard]] virtual const std::string& node() const noexcept = 0;
  // Rank among the ranks on this host (its shared memory), which picks the default GPU: the local rank,
  // except where MEMSTRESS_NODE splits a host into nodes, whose ranks must still take distinct GPUs.
  [[nodiscard]] virtual int host_rank() const noexcept = 0;
  // How long a rank waits for its peers in one step (--timeout): host collectives here, and device work
  // that needs the other ranks (NcclComm::wait) in the workloads.
  [[nodiscard]] virtual std::chrono::milliseconds timeout() const noexcept = 0;

  virtual void barrier() = 0;
  // A barrier whose waits never sleep, for the start of a host-timed region: the ranks leave it within
  // microseconds of each other (as after nccl-tests' MPI_Barrier), where a sleeping wait can release a
  // rank up to a millisecond late and that lateness would land in the first collective's time.
  virtual void spin_barrier() = 0;
  // `bytes` of rank `root` land in `bytes` on every rank (e.g. a ncclUniqueId).
  virtual void broadcast(std::span<std::byte> bytes, int root) = 0;
  // Every rank's value, in rank order, on every rank.
  [[nodiscard]] virtual std::vector<double> all_gather(double value) = 0;
  // Every rank's text, in rank order, on rank 0; other ranks get an empty vector.
  [[nodiscard]] virtual std::vector<std::string> gather(const std::string& text) = 0;
};

// A world of one process: every collective is the identity.
class SoloWorld final : public World {
 public:
  // `timeout` bounds device work that a communicator of one still waits for (the default: --timeout's).
  explicit SoloWorld(std::chrono::milliseconds timeout = std::chrono::minutes(5)) noexcept
      : timeout_(timeout) {}
  [[nodiscard]] int rank() const noexcept override { return 0; }
  [[nodiscard]] int size() const noexcept override { return 1; }
  [[nodiscard]] int local_rank() const noexcept override { return 0; }
  [[nodiscard]] int local_size() const noexcept override { return 1; }
  [[nodiscard]] const std::string& node() const noexcept override { return node_; }
  [[nodiscard]] int host_rank() const noexcept override { return 0; }
  [[nodiscard]] std::chrono::milliseconds timeout() const noexcept override { return timeout_; }
  void barrier() override {}
  void spin_barrier() override {}
  void broadcast(std::span<std::byte> /*bytes*/, int /*root*/) override {}
  [[nodiscard]] std::vector<double> all_gather(double value) override { return {value}; }
  [[nodiscard]] std::vector<std::string> gather(const std::string& text) override { return {text}; }

 private:
  std::chrono::milliseconds timeout_;
  std::string node_;
};

}  // namespace memstress
