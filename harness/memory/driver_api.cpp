#include "harness/memory/driver_api.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

#include "harness/core/error.hpp"

namespace memstress {
namespace {

// The ABI version we ask for: CUDA 12.0 semantics for every symbol used here.
constexpr unsigned kDriverAbiVersion = 12000;

template <typename Fn>
void resolve(const char* symbol, Fn& fn, unsigned version = kDriverAbiVersion) noexcept {
  void* address = nullptr;
  cudaDriverEntryPointQueryResult status{};
  if (cudaGetDriverEntryPointByVersion(symbol, &address, version, cudaEnableDefault, &status) ==
          cudaSuccess &&
      status == cudaDriverEntryPointSuccess) {
    fn = reinterpret_cast<Fn>(address);  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
  } else {
    static_cast<void>(cudaGetLastError());
  }
}

DriverApi load_driver_api() noexcept {
  DriverApi api;
  resolve("cuGetErrorName", api.get_error_name);
  resolve("cuGetErrorString", api.get_error_string);
  resolve("cuDriverGetVersion", api.driver_get_version);
  resolve("cuDeviceGetAttribute", api.device_get_attribute);
  resolve("cuMemAddressReserve", api.mem_address_reserve);
  resolve("cuMemAddressFree", api.mem_address_free);
  resolve("cuMemCreate", api.mem_create);
  resolve("cuMemRelease", api.mem_release);
  resolve("cuMemMap", api.mem_map);
  resolve("cuMemUnmap", api.mem_unmap);
  resolve("cuMemSetAccess", api.mem_set_access);
  resolve("cuMemGetAllocationGranularity", api.mem_get_allocation_granularity);
#if CUDA_VERSION >= 13000
  resolve("cuCtxCreate", api.ctx_create, 13000);
#else
  resolve("cuCtxCreate", api.ctx_create, 3020);
#endif
  resolve("cuCtxDestroy", api.ctx_destroy);
  resolve("cuCtxGetCurrent", api.ctx_get_current);
  resolve("cuDevicePrimaryCtxGetState", api.device_primary_ctx_get_state);
  return api;
}

std::string driver_error_name(CUresult result) {
  const char* name = nullptr;
  if (driver_api().get_error_name != nullptr && driver_api().get_error_name(result, &name) == CUDA_SUCCESS &&
      name != nullptr) {
    return name;
  }
  return "CUresult " + std::to_string(static_cast<int>(result));
}

std::string driver_error_text(CUresult result) {
  const char* text = nullptr;
  if (driver_api().get_error_string != nullptr &&
      driver_api().get_error_string(result, &text) == CUDA_SUCCESS && text != nullptr) {
    return text;
  }
  return "no description (driver API unavailable)";
}

}  // namespace

bool DriverApi::complete() const noexcept {
  return get_error_name != nullptr && get_error_string != nullptr && driver_get_version != nullptr &&
         device_get_attribute != nullptr && mem_address_reserve != nullptr && mem_address_free != nullptr &&
         mem_create != nullptr && mem_release != nullptr && mem_map != nullptr && mem_unmap != nullptr &&
         mem_set_access != nullptr && mem_get_allocation_granularity != nullptr;
}

CUresult create_context(CUcontext* context, CUdevice device) {
  const DriverApi& api = driver_api();
  if (api.ctx_create == nullptr || api.ctx_destroy == nullptr) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
#if CUDA_VERSION >= 13000
  return api.ctx_create(context, nullptr, 0, device);
#else
  return api.ctx_create(context, 0, device);
#endif
}

const DriverApi& driver_api() {
  static const DriverApi kApi = load_driver_api();
  return kApi;
}

namespace detail {

void throw_driver_error(CUresult result, const char* call, const char* file, int line) {
  throw ApiError("CUDA driver", static_cast<int>(result), driver_error_name(result), call, file, line,
                 driver_error_text(result));
}

void report_driver_error(CUresult result, const char* call, const char* file, int line) noexcept {
  try {
    std::fprintf(stderr, "memstress: warning: CUDA driver error %s: %s\n  in %s at %s:%d\n",
                 driver_error_name(result).c_str(), driver_error_text(result).c_str(), call, file, line);
  } catch (...) {  // NOLINT(bugprone-empty-catch): never throw from cleanup paths
  }
}

}  // namespace detail
}  // namespace memstress
