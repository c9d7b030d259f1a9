#pragma once

// This process's place in a job: MPI (an MpiSession and an MpiWorld) when an MPI launcher started it,
// a SoloWorld otherwise. Owns both; the World goes before MPI is finalized.

#include <chrono>
#include <memory>

#include "harness/core/launcher.hpp"
#include "harness/dist/world.hpp"

namespace memstress {

class MpiSession;

class Job {
 public:
  // `timeout`: how long a collective waits for a rank that is late (MpiWorld).
  explicit Job(std::chrono::milliseconds timeout, const EnvLookup& env = process_env());
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;
  Job(Job&&) = delete;
  Job& operator=(Job&&) = delete;

  [[nodiscard]] World& world() const noexcept { return *world_; }
  [[nodiscard]] bool under_mpi() const noexcept { return session_ != nullptr; }
  // Ends every rank of the job with `exit_code` without waiting for any (MPI_Abort), or this process
  // alone (std::_Exit) when there is no MPI: for after a peer failed, when finalizing would hang.
  [[noreturn]] void abort(int exit_code) const noexcept;

 private:
  std::unique_ptr<MpiSession> session_;  // declared first: destroyed last
  std::unique_ptr<World> world_;
};

}  // namespace memstress
