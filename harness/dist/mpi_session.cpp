#include "harness/dist/mpi_session.hpp"

#include <mpi.h>

#include <cstdlib>

#include "harness/core/error.hpp"
#include "harness/core/mpi_check.hpp"

namespace memstress {

MpiSession::MpiSession() {
  int provided = 0;
  // Funneled: only the main thread calls MPI (workloads' threads never do).
  MEMSTRESS_MPI_TRY(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
  MEMSTRESS_MPI_TRY(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  if (provided < MPI_THREAD_FUNNELED) {
    MEMSTRESS_MPI_WARN(MPI_Finalize());
    throw EnvironmentError("the MPI library does not support MPI_THREAD_FUNNELED");
  }
}

MpiSession::~MpiSession() {
  MEMSTRESS_MPI_WARN(MPI_Finalize());
}

void MpiSession::abort_job(int exit_code) noexcept {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; should it, this process still ends
}

}  // namespace memstress
