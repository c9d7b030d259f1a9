#pragma once

// This process's place in a job: MPI (an MpiSession and an MpiWorld) when an MPI launcher started it,
// a SoloWorld otherwise. Owns both; the World goes before MPI is finalized.

#include <chrono>
#include <exception>
#include <functional>
#include <memory>

#include "harness/core/exit_code.hpp"
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

// Thrown by a job's body on a rank that has said all it had to say about a failure (accept's verdict on a run
// that lost a rank) to end the job with `code`: run_as_job prints nothing more. With several ranks it ends
// every rank at once (Job::abort: a peer may be dead or hung, so finalizing could wait for ever); in a world
// of one it is the body's return value.
class EndJob : public std::exception {
 public:
  explicit EndJob(ExitCode code) noexcept : code_(code) {}
  [[nodiscard]] ExitCode code() const noexcept { return code_; }
  [[nodiscard]] const char* what() const noexcept override { return "the job ends"; }

 private:
  ExitCode code_;
};

// Runs `body` on this process's rank of a job (a Job whose collectives wait `timeout_s` seconds for a late
// rank; InputError naming `flag` for a timeout that is not a positive number). In a world of one, errors
// propagate as usual. With several ranks no rank may wait for the others after an error (one may be dead
// or hung), so an error is printed and ends the whole job with its exit code.
int run_as_job(double timeout_s, const char* flag, const std::function<int(World&)>& body);

}  // namespace memstress
