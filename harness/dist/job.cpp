#include "harness/dist/job.hpp"

#include <cstdio>
#include <cstdlib>

#include "harness/dist/mpi_session.hpp"
#include "harness/dist/mpi_world.hpp"

namespace memstress {

Job::Job(std::chrono::milliseconds timeout, const EnvLookup& env) {
  if (launched_by_mpi(env)) {
    session_ = std::make_unique<MpiSession>();
    world_ = std::make_unique<MpiWorld>(*session_, timeout);
  } else {
    world_ = std::make_unique<SoloWorld>();
  }
}

Job::~Job() = default;

void Job::abort(int exit_code) const noexcept {
  std::fflush(stdout);
  std::fflush(stderr);
  if (session_ != nullptr) {
    MpiSession::abort_job(exit_code);
  }
  std::_Exit(exit_code);
}

}  // namespace memstress
