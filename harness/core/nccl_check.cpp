#include "harness/core/nccl_check.hpp"

#include <cstdio>
#include <string>

#include "harness/core/error.hpp"

namespace memstress::detail {
namespace {

std::string nccl_result_name(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "ncclSuccess";
    case ncclUnhandledCudaError:
      return "ncclUnhandledCudaError";
    case ncclSystemError:
      return "ncclSystemError";
    case ncclInternalError:
      return "ncclInternalError";
    case ncclInvalidArgument:
      return "ncclInvalidArgument";
    case ncclInvalidUsage:
      return "ncclInvalidUsage";
    case ncclRemoteError:
      return "ncclRemoteError";
    case ncclInProgress:
      return "ncclInProgress";
    default:
      return "ncclResult " + std::to_string(static_cast<int>(result));
  }
}

}  // namespace

void throw_nccl_error(ncclResult_t result, const char* call, const char* file, int line) {
  throw ApiError("NCCL", static_cast<int>(result), nccl_result_name(result), call, file, line,
                 ncclGetErrorString(result));
}

void report_nccl_error(ncclResult_t result, const char* call, const char* file, int line) noexcept {
  std::fprintf(stderr, "memstress: warning: NCCL error %s: %s\n  in %s at %s:%d\n",
               nccl_result_name(result).c_str(), ncclGetErrorString(result), call, file, line);
}

}  // namespace memstress::detail
