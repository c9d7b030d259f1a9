// The GPUs the CUDA runtime sees, with what CUDA knows of them. CUDA 13 dropped clockRate and
// memoryClockRate from cudaDeviceProp; the peak clocks come from cudaDevAttrClockRate and
// cudaDevAttrMemoryClockRate (kHz) instead, and NVML overrides them where it can.

#include <cuda_runtime_api.h>

#include <array>
#include <optional>
#include <utility>

#include "harness/env/collect_parts.hpp"
#include "harness/memory/uuid.hpp"

namespace memstress::env_detail {
namespace {

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {  // no driver, no device, driver too old, …
    count = 0;
  }
  static_cast<void>(cudaGetLastError());
  return count;
}

std::optional<int> attribute_khz_as_mhz(cudaDeviceAttr attribute, int ordinal) {
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, attribute, ordinal) != cudaSuccess || khz <= 0) {
    static_cast<void>(cudaGetLastError());
    return std::nullopt;
  }
  return khz / 1000;
}

std::string pci_bus_id(int ordinal) {
  std::array<char, 32> buffer{};  // "0000:19:00.0" with room to spare
  if (cudaDeviceGetPCIBusId(buffer.data(), static_cast<int>(buffer.size()), ordinal) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return {};
  }
  buffer.back() = '\0';
  return std::string(buffer.data());
}

std::optional<GpuFacts> cuda_gpu(int ordinal) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, ordinal) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return std::nullopt;
  }
  GpuFacts gpu;
  gpu.ordinal = ordinal;
  prop.name[sizeof(prop.name) - 1] = '\0';
  gpu.name = prop.name;
  gpu.uuid = format_gpu_uuid(prop.uuid);
  gpu.pci_bus_id = pci_bus_id(ordinal);
  gpu.memory_bytes = prop.totalGlobalMem;
  gpu.sm_count = prop.multiProcessorCount;
  gpu.cc_major = prop.major;
  gpu.cc_minor = prop.minor;
  gpu.l2_bytes = prop.l2CacheSize > 0 ? static_cast<std::uint64_t>(prop.l2CacheSize) : 0;
  gpu.memory_bus_width_bits = prop.memoryBusWidth;
  gpu.ecc_enabled = prop.ECCEnabled != 0;
  gpu.sm_clock_max_mhz = attribute_khz_as_mhz(cudaDevAttrClockRate, ordinal);
  gpu.memory_clock_max_mhz = attribute_khz_as_mhz(cudaDevAttrMemoryClockRate, ordinal);
  return gpu;
}

}  // namespace

std::vector<GpuFacts> collect_cuda_gpus() {
  std::vector<GpuFacts> gpus;
  const int count = device_count();
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    if (std::optional<GpuFacts> gpu = cuda_gpu(ordinal)) {
      gpus.push_back(std::move(*gpu));
    }
  }
  return gpus;
}

}  // namespace memstress::env_detail
