#pragma once

// Throwing check for NCCL and a non-throwing variant for destructors.

#include <nccl.h>

namespace memstress::detail {

[[noreturn]] void throw_nccl_error(ncclResult_t result, const char* call, const char* file, int line);
void report_nccl_error(ncclResult_t result, const char* call, const char* file, int line) noexcept;

}  // namespace memstress::detail

#define MEMSTRESS_NCCL_TRY(call)                                                                \
  do {                                                                                          \
    const ncclResult_t memstress_nccl_status_ = (call);                                         \
    if (memstress_nccl_status_ != ncclSuccess) {                                                \
      ::memstress::detail::throw_nccl_error(memstress_nccl_status_, #call, __FILE__, __LINE__); \
    }                                                                                           \
  } while (false)

#define MEMSTRESS_NCCL_WARN(call)                                                                \
  do {                                                                                           \
    const ncclResult_t memstress_nccl_status_ = (call);                                          \
    if (memstress_nccl_status_ != ncclSuccess) {                                                 \
      ::memstress::detail::report_nccl_error(memstress_nccl_status_, #call, __FILE__, __LINE__); \
    }                                                                                            \
  } while (false)
