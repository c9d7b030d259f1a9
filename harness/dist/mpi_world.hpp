#pragma once

// The ranks of an MPI job as a World (one process per rank, started by mpirun).
//
// Design note [Collectives with a deadline]: a rank that crashed or hangs must not hang the job. So no
// collective here blocks: each posts non-blocking MPI and polls it (MPI_Test, MPI_Improbe) until a
// deadline, then throws DistError. Rank 0 waits `timeout` (the per-case timeout, --timeout): gather and
// barrier collect from each rank by point-to-point messages, so rank 0 knows, and names, the ranks that
// did not arrive. The other ranks wait for rank 0 a little longer, `timeout` plus a grace of at most
// kRankZeroGrace (2 s; no more than `timeout` itself), so that when a rank fails it is rank 0, the one
// that writes the results, that notices first; the runner adds the case to the message, rank 0 finishes
// the results document as aborted and ends the job (MPI_Abort). The grace is what rank 0 needs to write
// the document and abort, not another timeout: when rank 0 itself is dead (and the launcher lets the job
// run on), the others give up one timeout (and the grace) later, not two. Requests left pending after a
// timeout are not freed: the job is about to be aborted, and a later collective on this World is a bug.
// Works on a duplicate of MPI_COMM_WORLD whose errors come back as codes (MEMSTRESS_MPI_TRY).
//
// Design note [Nodes]. A node is the ranks that share a host's memory (MPI_COMM_TYPE_SHARED) and a node
// name: MPI's processor name (the host's), or MEMSTRESS_NODE where the launcher sets it per rank. The
// variable splits one host into several nodes, so the per-node logic (local ranks and the GPU each picks,
// `--in-turn` turns by local rank, stragglers named with their node) runs on one machine as it would on
// several: `mpirun -np 2 env MEMSTRESS_NODE=a memstress ... : -np 2 env MEMSTRESS_NODE=b memstress ...`.
// The GPUs stay the host's: a rank picks its GPU by its rank on the host (host_rank), so the emulated nodes
// of one host take distinct GPUs, and one rank per host measures the peer matrix. A name MEMSTRESS_NODE gives
// that MPI cannot carry (MPI_MAX_PROCESSOR_NAME) fails the job on every rank at once, exit 2.

#include <mpi.h>

#include <chrono>
#include <string>
#include <string_view>

#include "harness/dist/world.hpp"

namespace memstress {

class MpiSession;

// How much longer than rank 0 the other ranks wait (Note [Collectives with a deadline]).
inline constexpr std::chrono::milliseconds kRankZeroGrace{2000};

class MpiWorld final : public World {
 public:
  // Collective over MPI_COMM_WORLD. `timeout`: how long rank 0 waits for the other ranks in any
  // collective (at least 1 ms).
  MpiWorld(const MpiSession& session, std::chrono::milliseconds timeout);
  ~MpiWorld() override;
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;
  MpiWorld(MpiWorld&&) = delete;
  MpiWorld& operator=(MpiWorld&&) = delete;

  [[nodiscard]] int rank() const noexcept override { return rank_; }
  [[nodiscard]] int size() const noexcept override { return size_; }
  [[nodiscard]] int local_rank() const noexcept override { return local_rank_; }
  [[nodiscard]] int local_size() const noexcept override { return local_size_; }
  [[nodiscard]] const std::string& node() const noexcept override { return node_; }
  [[nodiscard]] int host_rank() const noexcept override { return host_rank_; }
  [[nodiscard]] std::chrono::milliseconds timeout() const noexcept override { return timeout_; }

  void barrier() override;
  void spin_barrier() override;
  void broadcast(std::span<std::byte> bytes, int root) override;
  [[nodiscard]] std::vector<double> all_gather(double value) override;
  [[nodiscard]] std::vector<std::string> gather(const std::string& text) override;

 private:
  // How a wait polls: sleeping a little longer each time (relaxed), or not at all (spin).
  enum class Pace { relaxed, spin };
  // Rank 0: every rank's text, in rank order; the others send theirs and get an empty vector.
  std::vector<std::string> collect(const std::string& text, int tag, Pace pace = Pace::relaxed);
  // Polls `request` until it completes; throws DistError naming `what` at the deadline.
  void wait(MPI_Request& request, std::string_view what, Pace pace = Pace::relaxed) const;
  void barrier(Pace pace);
  // How long this rank waits: `timeout` on rank 0, `timeout` plus the grace elsewhere (see the design note).
  [[nodiscard]] std::chrono::milliseconds patience() const noexcept;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  int host_rank_ = 0;
  std::string node_;
  std::chrono::milliseconds timeout_;
};

}  // namespace memstress
