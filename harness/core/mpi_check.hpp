#pragma once

// Throwing check for MPI calls (MPI_SUCCESS or not) and a non-throwing variant for destructors.
// Errors come back as codes only when the communicator's error handler is MPI_ERRORS_RETURN.

namespace memstress::detail {

[[noreturn]] void throw_mpi_error(int code, const char* call, const char* file, int line);
void report_mpi_error(int code, const char* call, const char* file, int line) noexcept;

}  // namespace memstress::detail

#define MEMSTRESS_MPI_TRY(call)                                                               \
  do {                                                                                        \
    const int memstress_mpi_status_ = (call);                                                 \
    if (memstress_mpi_status_ != 0 /* MPI_SUCCESS */) {                                       \
      ::memstress::detail::throw_mpi_error(memstress_mpi_status_, #call, __FILE__, __LINE__); \
    }                                                                                         \
  } while (false)

#define MEMSTRESS_MPI_WARN(call)                                                               \
  do {                                                                                         \
    const int memstress_mpi_status_ = (call);                                                  \
    if (memstress_mpi_status_ != 0 /* MPI_SUCCESS */) {                                        \
      ::memstress::detail::report_mpi_error(memstress_mpi_status_, #call, __FILE__, __LINE__); \
    }                                                                                          \
  } while (false)
