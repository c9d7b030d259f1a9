#pragma once

// MPI for the life of this object (RAII, one per process, never copied or moved): MPI_Init_thread on
// construction, MPI_Finalize on destruction. MPI_COMM_WORLD returns error codes (MPI_ERRORS_RETURN),
// so every call can go through MEMSTRESS_MPI_TRY. Only made when the process was started by an MPI
// launcher (launched_by_mpi); a process started alone never initializes MPI.

namespace memstress {

class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  MpiSession(MpiSession&&) = delete;
  MpiSession& operator=(MpiSession&&) = delete;

  // Ends every rank of the job with `exit_code` (MPI_Abort on MPI_COMM_WORLD): for a rank that cannot
  // wait for a peer that failed or hangs.
  [[noreturn]] static void abort_job(int exit_code) noexcept;
};

}  // namespace memstress
