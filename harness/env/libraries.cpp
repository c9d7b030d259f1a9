// Versions of the libraries a run uses: CUDA driver and runtime, NCCL (the library loaded, not the
// header built with) and MPI (library text and standard; both queries are allowed before MPI_Init).

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <mpi.h>
#include <nccl.h>

#include <array>

#include "harness/env/collect_parts.hpp"
#include "harness/env/parse_detail.hpp"

namespace memstress::env_detail {
namespace {

int cuda_driver_version() {
  int version = 0;
  if (cudaDriverGetVersion(&version) != cudaSuccess) {
    version = 0;
  }
  static_cast<void>(cudaGetLastError());  // leave no sticky "no driver" error for the next call
  return version;
}

int cuda_runtime_version() {
  int version = 0;
  if (cudaRuntimeGetVersion(&version) != cudaSuccess) {
    version = 0;
  }
  static_cast<void>(cudaGetLastError());
  return version;
}

std::string nccl_version() {
  int code = 0;
  if (const ncclResult_t result = ncclGetVersion(&code); result != ncclSuccess) {
    return fmt::format("unknown: ncclGetVersion failed: {}", ncclGetErrorString(result));
  }
  return format_nccl_version(code);
}

std::string mpi_library() {
  std::array<char, MPI_MAX_LIBRARY_VERSION_STRING> buffer{};
  int length = 0;
  if (MPI_Get_library_version(buffer.data(), &length) != MPI_SUCCESS) {
    return "unknown: MPI_Get_library_version failed";
  }
  buffer.back() = '\0';
  return first_line_trimmed(buffer.data());  // NUL-terminated; `length` may or may not count the NUL
}

std::string mpi_standard() {
  int major = 0;
  int minor = 0;
  if (MPI_Get_version(&major, &minor) != MPI_SUCCESS) {
    return "unknown";
  }
  return fmt::format("{}.{}", major, minor);
}

}  // namespace

void collect_library_versions(Environment& env) {
  env.cuda_driver_version = cuda_driver_version();
  env.cuda_runtime_version = cuda_runtime_version();
  env.nccl_version = nccl_version();
  env.mpi_library = mpi_library();
  env.mpi_standard = mpi_standard();
}

}  // namespace memstress::env_detail
