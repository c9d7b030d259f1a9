#include "harness/dist/job.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "harness/core/error.hpp"
#include "harness/core/log.hpp"
#include "harness/dist/mpi_session.hpp"
#include "harness/dist/mpi_world.hpp"

namespace memstress {

Job::Job(std::chrono::milliseconds timeout, const EnvLookup& env) {
  if (launched_by_mpi(env)) {
    session_ = std::make_unique<MpiSession>();
    world_ = std::make_unique<MpiWorld>(*session_, timeout);
  } else {
    world_ = std::make_unique<SoloWorld>(timeout);
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

int run_as_job(double timeout_s, const char* flag, const std::function<int(World&)>& body) {
  if (!(timeout_s > 0) || timeout_s > 1e6) {
    throw InputError(fmt::format("{} {}: expected seconds, more than 0", flag, timeout_s));
  }
  const Job job(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::duration<double>(timeout_s)));
  if (job.world().size() == 1) {
    try {
      return body(job.world());
    } catch (const EndJob& end) {
      return to_int(end.code());
    }
  }
  try {
    return body(job.world());
  } catch (const EndJob& end) {
    job.abort(to_int(end.code()));
  } catch (const Error& e) {
    fmt::print(stderr, "{}error: {}\n", note_prefix(), e.what());
    job.abort(to_int(e.exit_code()));
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}internal error: {}\n", note_prefix(), e.what());
    job.abort(to_int(ExitCode::check_failed));
  }
}

}  // namespace memstress
