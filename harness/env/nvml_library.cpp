// NvmlLibrary: dlopen/dlsym of libnvidia-ml.so.1, nvmlInit_v2 and nvmlShutdown (see nvml_library.hpp).

#include "harness/env/nvml_library.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <array>
#include <string_view>
#include <utility>

namespace memstress {
namespace {

constexpr const char* kLibraryName = "libnvidia-ml.so.1";

std::string last_dl_error() {
  const char* text = dlerror();
  return text != nullptr ? std::string(text) : std::string("unknown dl error");
}

// Resolves `symbol` into `fn`; returns false (and leaves fn null) when the symbol is absent.
template <typename Fn>
bool resolve(void* handle, const char* symbol, Fn& fn) noexcept {
  void* address = dlsym(handle, symbol);
  fn = reinterpret_cast<Fn>(address);  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
  return address != nullptr;
}

// Resolves every entry point; returns the first required symbol that is missing, or "" if none is.
std::string_view resolve_all(void* handle, NvmlApi& api) noexcept {
  std::string_view missing;
  const auto required = [&](const char* symbol, auto& fn) {
    if (!resolve(handle, symbol, fn) && missing.empty()) {
      missing = symbol;
    }
  };
  required("nvmlInit_v2", api.init_v2);
  required("nvmlShutdown", api.shutdown);
  required("nvmlErrorString", api.error_string);
  required("nvmlSystemGetDriverVersion", api.system_get_driver_version);
  required("nvmlDeviceGetHandleByPciBusId_v2", api.device_get_handle_by_pci_bus_id_v2);
  required("nvmlDeviceGetHandleByUUID", api.device_get_handle_by_uuid);

  resolve(handle, "nvmlDeviceGetClockInfo", api.device_get_clock_info);
  resolve(handle, "nvmlDeviceGetMaxClockInfo", api.device_get_max_clock_info);
  resolve(handle, "nvmlDeviceGetCurrPcieLinkGeneration", api.device_get_curr_pcie_link_generation);
  resolve(handle, "nvmlDeviceGetCurrPcieLinkWidth", api.device_get_curr_pcie_link_width);
  resolve(handle, "nvmlDeviceGetEnforcedPowerLimit", api.device_get_enforced_power_limit);
  resolve(handle, "nvmlDeviceGetTemperatureV", api.device_get_temperature_v);
  resolve(handle, "nvmlDeviceGetTemperature", api.device_get_temperature);
  resolve(handle, "nvmlDeviceGetPersistenceMode", api.device_get_persistence_mode);
  resolve(handle, "nvmlDeviceGetMigMode", api.device_get_mig_mode);
  resolve(handle, "nvmlDeviceGetVbiosVersion", api.device_get_vbios_version);
  resolve(handle, "nvmlDeviceGetSerial", api.device_get_serial);
  resolve(handle, "nvmlDeviceGetEccMode", api.device_get_ecc_mode);
  resolve(handle, "nvmlDeviceGetPowerUsage", api.device_get_power_usage);
  resolve(handle, "nvmlDeviceGetPcieReplayCounter", api.device_get_pcie_replay_counter);
  resolve(handle, "nvmlDeviceGetTotalEccErrors", api.device_get_total_ecc_errors);
  resolve(handle, "nvmlDeviceGetRetiredPages", api.device_get_retired_pages);
  resolve(handle, "nvmlDeviceGetRetiredPagesPendingStatus", api.device_get_retired_pages_pending_status);
  resolve(handle, "nvmlDeviceGetRemappedRows", api.device_get_remapped_rows);
  resolve(handle, "nvmlDeviceGetComputeRunningProcesses_v3", api.device_get_compute_running_processes);
  resolve(handle, "nvmlDeviceGetMaxPcieLinkGeneration", api.device_get_max_pcie_link_generation);
  resolve(handle, "nvmlDeviceGetMaxPcieLinkWidth", api.device_get_max_pcie_link_width);
  resolve(handle, "nvmlDeviceGetNvLinkState", api.device_get_nvlink_state);
  resolve(handle, "nvmlDeviceGetNvLinkErrorCounter", api.device_get_nvlink_error_counter);
  // Drivers before R535 name it by its older name, with the same signature and bits.
  if (!resolve(handle, "nvmlDeviceGetCurrentClocksEventReasons",
               api.device_get_current_clocks_event_reasons)) {
    resolve(handle, "nvmlDeviceGetCurrentClocksThrottleReasons", api.device_get_current_clocks_event_reasons);
  }
  resolve(handle, "nvmlDeviceGetViolationStatus", api.device_get_violation_status);
  resolve(handle, "nvmlDeviceGetFieldValues", api.device_get_field_values);
  resolve(handle, "nvmlEventSetCreate", api.event_set_create);
  resolve(handle, "nvmlDeviceRegisterEvents", api.device_register_events);
  resolve(handle, "nvmlEventSetWait_v2", api.event_set_wait_v2);
  resolve(handle, "nvmlEventSetFree", api.event_set_free);
  return missing;
}

}  // namespace

NvmlLibrary::NvmlLibrary() noexcept {
  try {
    handle_ = dlopen(kLibraryName, RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      status_ = fmt::format("not loadable: {}", last_dl_error());  // dlerror names the library
      return;
    }
    if (const std::string_view missing = resolve_all(handle_, api_); !missing.empty()) {
      status_ = fmt::format("symbol {} missing from {}", missing, kLibraryName);
      return;
    }
    if (const nvmlReturn_t result = api_.init_v2(); result != NVML_SUCCESS) {
      status_ = fmt::format("nvmlInit_v2 failed: {}", error_text(result));
      return;
    }
    initialised_ = true;
    status_ = "ok";
  } catch (...) {  // only std::bad_alloc from formatting the status; NVML stays unused
    release();
    status_ = "out of memory";  // short enough for the small-string buffer: does not allocate
  }
}

NvmlLibrary::~NvmlLibrary() {
  release();
}

NvmlLibrary::NvmlLibrary(NvmlLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      initialised_(std::exchange(other.initialised_, false)),
      api_(std::exchange(other.api_, NvmlApi{})),
      status_(std::move(other.status_)) {}

NvmlLibrary& NvmlLibrary::operator=(NvmlLibrary&& other) noexcept {
  if (this != &other) {
    release();
    handle_ = std::exchange(other.handle_, nullptr);
    initialised_ = std::exchange(other.initialised_, false);
    api_ = std::exchange(other.api_, NvmlApi{});
    status_ = std::move(other.status_);
  }
  return *this;
}

void NvmlLibrary::release() noexcept {
  if (initialised_) {
    static_cast<void>(api_.shutdown());  // nothing useful to do with a failure here
    initialised_ = false;
  }
  if (handle_ != nullptr) {
    dlclose(handle_);
    handle_ = nullptr;
  }
  api_ = NvmlApi{};
}

std::string NvmlLibrary::driver_version() const {
  if (!initialised_) {
    return {};
  }
  std::array<char, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE> buffer{};
  if (api_.system_get_driver_version(buffer.data(), static_cast<unsigned>(buffer.size())) != NVML_SUCCESS) {
    return {};
  }
  return {buffer.data()};
}

NvmlDeviceLookup find_nvml_device(const NvmlLibrary& nvml, const std::string& pci_bus_id,
                                  const std::string& uuid) {
  NvmlDeviceLookup out;
  if (!nvml.usable()) {
    out.why = fmt::format("NVML: {}", nvml.status());
    return out;
  }
  const NvmlApi& api = nvml.api();
  const bool by_bus = !pci_bus_id.empty() &&
                      api.device_get_handle_by_pci_bus_id_v2(pci_bus_id.c_str(), &out.device) == NVML_SUCCESS;
  if (!by_bus &&
      !(!uuid.empty() && api.device_get_handle_by_uuid(uuid.c_str(), &out.device) == NVML_SUCCESS)) {
    out.why = fmt::format("NVML has no GPU of PCI bus id '{}' or UUID '{}'", pci_bus_id, uuid);
  }
  return out;
}

std::string NvmlLibrary::error_text(nvmlReturn_t result) const {
  if (api_.error_string != nullptr) {
    if (const char* text = api_.error_string(result); text != nullptr) {
      return text;
    }
  }
  return fmt::format("nvmlReturn_t {}", static_cast<int>(result));
}

}  // namespace memstress
