// add_nvml_facts: per-GPU queries through the run-time loaded NVML (see nvml_gpu.hpp).

#include "harness/env/nvml_gpu.hpp"

#include <array>
#include <optional>
#include <string>
#include <utility>

namespace memstress {
namespace {

// Calls `fn(device, args…, &value)` for an unsigned result; empty when fn is absent or fails.
template <typename Fn, typename... Args>
std::optional<unsigned> query_unsigned(Fn fn, nvmlDevice_t device, Args... args) {
  unsigned value = 0;
  if (fn == nullptr || fn(device, args..., &value) != NVML_SUCCESS) {
    return std::nullopt;
  }
  return value;
}

std::optional<int> as_int(std::optional<unsigned> value) {
  if (!value) {
    return std::nullopt;
  }
  return static_cast<int>(*value);
}

template <typename Fn, std::size_t N>
std::string query_text(Fn fn, nvmlDevice_t device, std::array<char, N>& buffer) {
  if (fn == nullptr || fn(device, buffer.data(), static_cast<unsigned>(buffer.size())) != NVML_SUCCESS) {
    return {};
  }
  return std::string(buffer.data());
}

template <typename T>
void set_if_known(std::optional<T>& field, std::optional<T> value) {
  if (value) {
    field = value;
  }
}

std::optional<bool> enable_state(nvmlReturn_t result, nvmlEnableState_t state) {
  if (result != NVML_SUCCESS) {
    return std::nullopt;
  }
  return state == NVML_FEATURE_ENABLED;
}

}  // namespace

std::optional<int> nvml_gpu_temperature(const NvmlApi& api, nvmlDevice_t device) {
  if (api.device_get_temperature_v != nullptr) {
    nvmlTemperature_t reading{};
    // nvmlTemperature_v1, spelled out: NVML_STRUCT_VERSION uses a C cast.
    reading.version = static_cast<unsigned>(sizeof(nvmlTemperature_v1_t)) | (1U << 24U);
    reading.sensorType = NVML_TEMPERATURE_GPU;
    if (api.device_get_temperature_v(device, &reading) == NVML_SUCCESS) {
      return reading.temperature;
    }
  }
  return as_int(query_unsigned(api.device_get_temperature, device, NVML_TEMPERATURE_GPU));
}

bool add_nvml_facts(const NvmlLibrary& nvml, GpuFacts& gpu) {
  if (!nvml.usable()) {
    return false;
  }
  const NvmlApi& api = nvml.api();
  const NvmlDeviceLookup found = find_nvml_device(nvml, gpu.pci_bus_id, gpu.uuid);
  if (!found.why.empty()) {
    return false;
  }
  nvmlDevice_t device = found.device;  // a handle: the pointer is NVML's

  set_if_known(gpu.sm_clock_mhz, as_int(query_unsigned(api.device_get_clock_info, device, NVML_CLOCK_SM)));
  set_if_known(gpu.sm_clock_max_mhz,
               as_int(query_unsigned(api.device_get_max_clock_info, device, NVML_CLOCK_SM)));
  set_if_known(gpu.memory_clock_mhz,
               as_int(query_unsigned(api.device_get_clock_info, device, NVML_CLOCK_MEM)));
  set_if_known(gpu.memory_clock_max_mhz,
               as_int(query_unsigned(api.device_get_max_clock_info, device, NVML_CLOCK_MEM)));
  set_if_known(gpu.pcie_link_gen, as_int(query_unsigned(api.device_get_curr_pcie_link_generation, device)));
  set_if_known(gpu.pcie_link_width, as_int(query_unsigned(api.device_get_curr_pcie_link_width, device)));
  if (const auto milliwatts = query_unsigned(api.device_get_enforced_power_limit, device)) {
    gpu.power_limit_w = static_cast<double>(*milliwatts) / 1000.0;
  }
  set_if_known(gpu.temperature_c, nvml_gpu_temperature(api, device));

  if (api.device_get_persistence_mode != nullptr) {
    nvmlEnableState_t mode{};
    set_if_known(gpu.persistence_mode, enable_state(api.device_get_persistence_mode(device, &mode), mode));
  }
  if (api.device_get_mig_mode != nullptr) {
    unsigned current = 0;
    unsigned pending = 0;
    if (api.device_get_mig_mode(device, &current, &pending) == NVML_SUCCESS) {
      gpu.mig_enabled = current == NVML_DEVICE_MIG_ENABLE;
    }
  }
  if (!gpu.ecc_enabled && api.device_get_ecc_mode != nullptr) {
    nvmlEnableState_t current{};
    nvmlEnableState_t pending{};
    gpu.ecc_enabled = enable_state(api.device_get_ecc_mode(device, &current, &pending), current);
  }

  std::array<char, NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE> vbios{};
  if (std::string text = query_text(api.device_get_vbios_version, device, vbios); !text.empty()) {
    gpu.vbios_version = std::move(text);
  }
  std::array<char, NVML_DEVICE_SERIAL_BUFFER_SIZE> serial{};
  if (std::string text = query_text(api.device_get_serial, device, serial); !text.empty()) {
    gpu.serial = std::move(text);
  }
  return true;
}

}  // namespace memstress
