#include "harness/core/mpi_check.hpp"

#include <mpi.h>

#include <array>
#include <cstdio>
#include <string>

#include "harness/core/error.hpp"

static_assert(MPI_SUCCESS == 0, "mpi_check.hpp compares against 0");

namespace memstress::detail {
namespace {

std::string mpi_error_text(int code) {
  std::array<char, MPI_MAX_ERROR_STRING> text{};
  int length = 0;
  if (MPI_Error_string(code, text.data(), &length) != MPI_SUCCESS) {
    return "unknown MPI error";
  }
  return {text.data(), static_cast<std::size_t>(length)};
}

}  // namespace

void throw_mpi_error(int code, const char* call, const char* file, int line) {
  int error_class = code;
  MPI_Error_class(code, &error_class);
  throw ApiError("MPI", code, "MPI error class " + std::to_string(error_class), call, file, line,
                 mpi_error_text(code));
}

void report_mpi_error(int code, const char* call, const char* file, int line) noexcept {
  try {
    std::fprintf(stderr, "memstress: warning: MPI error %d: %s\n  in %s at %s:%d\n", code,
                 mpi_error_text(code).c_str(), call, file, line);
  } catch (...) {  // NOLINT(bugprone-empty-catch): reporting must never throw from a destructor
  }
}

}  // namespace memstress::detail
