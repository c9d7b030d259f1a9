#include "harness/memory/cuda_backend.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstdio>

#include "harness/core/cuda_check.hpp"
#include "harness/core/error.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "harness/memory/driver_api.hpp"
#include "harness/memory/gpu_backend.hpp"
#include "harness/memory/uuid.hpp"

namespace memstress {
namespace {

cudaEvent_t as_event(EventHandle handle) noexcept {
  return reinterpret_cast<cudaEvent_t>(handle);  // NOLINT(performance-no-int-to-ptr)
}

CUmemAllocationProp device_allocation(int ordinal) noexcept {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = ordinal;
  return prop;
}

CUdeviceptr as_deviceptr(void* address) noexcept {
  return reinterpret_cast<CUdeviceptr>(address);
}

}  // namespace

CudaBackend::CudaBackend(int ordinal) {
  const int count = cuda::device_count();
  if (ordinal < 0 || ordinal >= count) {
    throw EnvironmentError(fmt::format("cuda:{}: this machine has {} CUDA device(s)", ordinal, count));
  }
  cudaDeviceProp prop{};
  MEMSTRESS_CUDA_TRY(cudaGetDeviceProperties(&prop, ordinal));
  info_.kind = BackendKind::cuda;
  info_.ordinal = ordinal;
  info_.name = prop.name;
  info_.uuid = format_gpu_uuid(prop.uuid);
  info_.capacity = prop.totalGlobalMem;
  // Create the context now, so its memory is not charged to the first case.
  const cuda::ScopedDevice device(ordinal);
  MEMSTRESS_CUDA_TRY(cudaFree(nullptr));
  const DriverApi& api = driver_api();
  if (api.mem_get_allocation_granularity != nullptr) {
    const CUmemAllocationProp alloc_prop = device_allocation(ordinal);
    std::size_t granularity = 0;
    MEMSTRESS_CU_TRY(
        api.mem_get_allocation_granularity(&granularity, &alloc_prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    page_bytes_ = granularity;
  }
}

CudaBackend::~CudaBackend() {
  for (const EventHandle e : free_events_) {
    MEMSTRESS_CUDA_WARN(cudaEventDestroy(as_event(e)));
  }
  for (const auto& [start, mapping] : mappings_) {
    MEMSTRESS_CU_WARN(driver_api().mem_unmap(start, mapping.bytes));
    MEMSTRESS_CU_WARN(driver_api().mem_release(mapping.handle));
  }
}

MemInfo CudaBackend::mem_info() const {
  const cuda::ScopedDevice device(info_.ordinal);
  std::size_t free = 0;
  std::size_t total = 0;
  MEMSTRESS_CUDA_TRY(cudaMemGetInfo(&free, &total));
  return {free, total};
}

void* CudaBackend::try_reserve(std::size_t bytes) {
  const cuda::ScopedDevice device(info_.ordinal);
  void* address = nullptr;
  const cudaError_t status = cudaMalloc(&address, bytes);
  if (status == cudaErrorMemoryAllocation) {
    static_cast<void>(cudaGetLastError());
    return nullptr;
  }
  MEMSTRESS_CUDA_TRY(status);
  return address;
}

void CudaBackend::release(void* address, std::size_t /*bytes*/) noexcept {
  try {
    const cuda::ScopedDevice device(info_.ordinal);
    MEMSTRESS_CUDA_WARN(cudaFree(address));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memstress: warning: releasing device memory: %s\n", e.what());
  }
}

void CudaBackend::synchronize() {
  const cuda::ScopedDevice device(info_.ordinal);
  MEMSTRESS_CUDA_TRY(cudaDeviceSynchronize());
}

EventHandle CudaBackend::record_event(StreamRef stream) {
  EventHandle handle = 0;
  {
    const std::scoped_lock lock(events_mutex_);
    if (!free_events_.empty()) {
      handle = free_events_.back();
      free_events_.pop_back();
    }
  }
  const cuda::ScopedDevice device(info_.ordinal);
  if (handle == 0) {
    cudaEvent_t event = nullptr;
    MEMSTRESS_CUDA_TRY(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    handle = reinterpret_cast<EventHandle>(event);
  }
  MEMSTRESS_CUDA_TRY(cudaEventRecord(as_event(handle), stream.cuda()));
  return handle;
}

bool CudaBackend::event_complete(EventHandle event) {
  const cudaError_t status = cudaEventQuery(as_event(event));
  if (status == cudaErrorNotReady) {
    static_cast<void>(cudaGetLastError());
    return false;
  }
  MEMSTRESS_CUDA_TRY(status);
  return true;
}

void CudaBackend::synchronize_event(EventHandle event) {
  MEMSTRESS_CUDA_TRY(cudaEventSynchronize(as_event(event)));
}

void CudaBackend::release_event(EventHandle event) noexcept {
  try {
    const std::scoped_lock lock(events_mutex_);
    free_events_.push_back(event);
  } catch (...) {
    MEMSTRESS_CUDA_WARN(cudaEventDestroy(as_event(event)));
  }
}

void* CudaBackend::reserve_address_range(std::size_t bytes) {
  const DriverApi& api = driver_api();
  if (!api.complete()) {
    throw EnvironmentError(
        "expandable segments need the CUDA driver's virtual memory API, which is unavailable");
  }
  CUdeviceptr address = 0;
  MEMSTRESS_CU_TRY(api.mem_address_reserve(&address, bytes, page_bytes_, 0, 0));
  return reinterpret_cast<void*>(address);  // NOLINT(performance-no-int-to-ptr)
}

void CudaBackend::release_address_range(void* address, std::size_t bytes) noexcept {
  const auto start = reinterpret_cast<std::uintptr_t>(address);
  unmap(address, bytes);
  MEMSTRESS_CU_WARN(driver_api().mem_address_free(start, bytes));
}

bool CudaBackend::try_map(void* address, std::size_t bytes) {
  const DriverApi& api = driver_api();
  const cuda::ScopedDevice device(info_.ordinal);
  const CUmemAllocationProp prop = device_allocation(info_.ordinal);
  CUmemGenericAllocationHandle handle = 0;
  const CUresult created = api.mem_create(&handle, bytes, &prop, 0);
  if (created == CUDA_ERROR_OUT_OF_MEMORY) {
    return false;
  }
  MEMSTRESS_CU_TRY(created);
  const CUdeviceptr start = as_deviceptr(address);
  const CUresult mapped = api.mem_map(start, bytes, 0, handle, 0);
  if (mapped != CUDA_SUCCESS) {
    MEMSTRESS_CU_WARN(api.mem_release(handle));
    MEMSTRESS_CU_TRY(mapped);
  }
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  const CUresult accessible = api.mem_set_access(start, bytes, &access, 1);
  if (accessible != CUDA_SUCCESS) {
    MEMSTRESS_CU_WARN(api.mem_unmap(start, bytes));
    MEMSTRESS_CU_WARN(api.mem_release(handle));
    MEMSTRESS_CU_TRY(accessible);
  }
  const std::scoped_lock lock(vmm_mutex_);
  mappings_.emplace(start, Mapping{handle, bytes});
  return true;
}

void CudaBackend::unmap(void* address, std::size_t bytes) noexcept {
  const auto start = reinterpret_cast<std::uintptr_t>(address);
  const std::scoped_lock lock(vmm_mutex_);
  for (auto it = mappings_.lower_bound(start); it != mappings_.end() && it->first < start + bytes;) {
    MEMSTRESS_CU_WARN(driver_api().mem_unmap(it->first, it->second.bytes));
    MEMSTRESS_CU_WARN(driver_api().mem_release(it->second.handle));
    it = mappings_.erase(it);
  }
}

int gpu_count() {
  return cuda::device_count();
}

std::string_view no_gpu_reason() noexcept {
  return "no NVIDIA driver or no GPU";
}

// The backend's device becomes the calling thread's current device, so that a rank of an mpirun job (or
// --device cuda:N) drives cuda:N, not cuda:0. Threads that workloads start make it current themselves
// (cuda::ScopedDevice).
std::unique_ptr<DeviceBackend> make_gpu_backend(int ordinal) {
  auto backend = std::make_unique<CudaBackend>(ordinal);
  MEMSTRESS_CUDA_TRY(cudaSetDevice(ordinal));
  return backend;
}

}  // namespace memstress
