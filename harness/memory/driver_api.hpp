#pragma once

// The CUDA driver API, reached through the runtime (cudaGetDriverEntryPointByVersion) instead of
// linking libcuda: the memstress binary must start on a machine with no NVIDIA driver at all, and a
// libcuda link dependency would stop it at load time. Function types come from cuda.h's declarations,
// so nothing here restates the driver's signatures.

#include <cuda.h>

namespace memstress {

struct DriverApi {
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuGetErrorString) get_error_string = nullptr;
  decltype(&::cuDriverGetVersion) driver_get_version = nullptr;
  decltype(&::cuDeviceGetAttribute) device_get_attribute = nullptr;
  // Virtual memory management, for expandable segments.
  decltype(&::cuMemAddressReserve) mem_address_reserve = nullptr;
  decltype(&::cuMemAddressFree) mem_address_free = nullptr;
  decltype(&::cuMemCreate) mem_create = nullptr;
  decltype(&::cuMemRelease) mem_release = nullptr;
  decltype(&::cuMemMap) mem_map = nullptr;
  decltype(&::cuMemUnmap) mem_unmap = nullptr;
  decltype(&::cuMemSetAccess) mem_set_access = nullptr;
  decltype(&::cuMemGetAllocationGranularity) mem_get_allocation_granularity = nullptr;
  // Contexts, to measure what one costs (the nccl_memory workload); not part of complete(). cuCtxCreate
  // has four versions (v2 at 3.2, v3 at 11.4, v4 at 12.5): with CUDA 13's headers it is v4, asked for at
  // 13.0; with older headers v2, asked for at 3.2 (cuda.h 12 calls v2 cuCtxCreate, but the 12.x versions
  // return v3 or v4). create_context() calls the one resolved.
#if CUDA_VERSION >= 13000
  decltype(&::cuCtxCreate) ctx_create = nullptr;
#else
  CUresult (*ctx_create)(CUcontext* context, unsigned int flags, CUdevice device) = nullptr;
#endif
  decltype(&::cuCtxDestroy) ctx_destroy = nullptr;
  // The thread's current context (ScopedDevice, cuda_handles.cpp) and whether a device's primary context is
  // active (its GPU test); not part of complete().
  decltype(&::cuCtxGetCurrent) ctx_get_current = nullptr;
  decltype(&::cuDevicePrimaryCtxGetState) device_primary_ctx_get_state = nullptr;

  // True when every entry point resolved (a driver is present and new enough).
  [[nodiscard]] bool complete() const noexcept;
};

// Resolved once per process on first use; afterwards immutable. Entries are null without a driver.
const DriverApi& driver_api();

// A new context on `device` with default flags, made current (cuCtxCreate, whichever version the headers
// declare). CUDA_ERROR_NOT_SUPPORTED where the entry point did not resolve.
CUresult create_context(CUcontext* context, CUdevice device);

namespace detail {
[[noreturn]] void throw_driver_error(CUresult result, const char* call, const char* file, int line);
void report_driver_error(CUresult result, const char* call, const char* file, int line) noexcept;
}  // namespace detail

}  // namespace memstress

// Throwing check for driver-API calls made through driver_api(); a non-throwing one for destructors.
#define MEMSTRESS_CU_TRY(call)                                                                  \
  do {                                                                                          \
    const CUresult memstress_cu_status_ = (call);                                               \
    if (memstress_cu_status_ != CUDA_SUCCESS) {                                                 \
      ::memstress::detail::throw_driver_error(memstress_cu_status_, #call, __FILE__, __LINE__); \
    }                                                                                           \
  } while (false)

#define MEMSTRESS_CU_WARN(call)                                                                  \
  do {                                                                                           \
    const CUresult memstress_cu_status_ = (call);                                                \
    if (memstress_cu_status_ != CUDA_SUCCESS) {                                                  \
      ::memstress::detail::report_driver_error(memstress_cu_status_, #call, __FILE__, __LINE__); \
    }                                                                                            \
  } while (false)
