#pragma once

// NVML, loaded at run time with dlopen("libnvidia-ml.so.1") and never linked, so that one binary starts
// on machines without an NVIDIA driver. nvml.h supplies the declarations; every entry point is resolved
// by its versioned symbol name (nvml.h maps nvmlInit to nvmlInit_v2 and so on with macros, which dlsym
// does not see). The library is initialised for the lifetime of the object and shut down after it.
//
// Nothing here throws: when the library, a required symbol or nvmlInit is missing, usable() is false and
// status() says why. Optional entry points (newer than some drivers) are null when absent.

#include <nvml.h>

#include <string>

namespace memstress {

// Typed entry points, named after the symbols they were resolved from.
struct NvmlApi {
  // Required: without these the library is not used.
  decltype(&::nvmlInit_v2) init_v2 = nullptr;
  decltype(&::nvmlShutdown) shutdown = nullptr;
  decltype(&::nvmlErrorString) error_string = nullptr;
  decltype(&::nvmlSystemGetDriverVersion) system_get_driver_version = nullptr;
  decltype(&::nvmlDeviceGetHandleByPciBusId_v2) device_get_handle_by_pci_bus_id_v2 = nullptr;
  decltype(&::nvmlDeviceGetHandleByUUID) device_get_handle_by_uuid = nullptr;
  // Optional: a null pointer leaves the matching fact unknown.
  decltype(&::nvmlDeviceGetClockInfo) device_get_clock_info = nullptr;
  decltype(&::nvmlDeviceGetMaxClockInfo) device_get_max_clock_info = nullptr;
  decltype(&::nvmlDeviceGetCurrPcieLinkGeneration) device_get_curr_pcie_link_generation = nullptr;
  decltype(&::nvmlDeviceGetCurrPcieLinkWidth) device_get_curr_pcie_link_width = nullptr;
  decltype(&::nvmlDeviceGetEnforcedPowerLimit) device_get_enforced_power_limit = nullptr;
  decltype(&::nvmlDeviceGetTemperatureV) device_get_temperature_v = nullptr;  // drivers >= 565
  // The older query, deprecated in NVML 13; typed by hand so a deprecation attribute cannot fire.
  nvmlReturn_t (*device_get_temperature)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int*) = nullptr;
  decltype(&::nvmlDeviceGetPersistenceMode) device_get_persistence_mode = nullptr;
  decltype(&::nvmlDeviceGetMigMode) device_get_mig_mode = nullptr;
  decltype(&::nvmlDeviceGetVbiosVersion) device_get_vbios_version = nullptr;
  decltype(&::nvmlDeviceGetSerial) device_get_serial = nullptr;
  decltype(&::nvmlDeviceGetEccMode) device_get_ecc_mode = nullptr;
  // Health (harness/env/health.hpp), each optional too.
  decltype(&::nvmlDeviceGetTotalEccErrors) device_get_total_ecc_errors = nullptr;
  decltype(&::nvmlDeviceGetRetiredPages) device_get_retired_pages = nullptr;
  decltype(&::nvmlDeviceGetRetiredPagesPendingStatus) device_get_retired_pages_pending_status = nullptr;
  decltype(&::nvmlDeviceGetRemappedRows) device_get_remapped_rows = nullptr;
  decltype(&::nvmlDeviceGetComputeRunningProcesses_v3) device_get_compute_running_processes = nullptr;
  decltype(&::nvmlDeviceGetMaxPcieLinkGeneration) device_get_max_pcie_link_generation = nullptr;
  decltype(&::nvmlDeviceGetMaxPcieLinkWidth) device_get_max_pcie_link_width = nullptr;
  decltype(&::nvmlDeviceGetNvLinkState) device_get_nvlink_state = nullptr;
  decltype(&::nvmlDeviceGetNvLinkErrorCounter) device_get_nvlink_error_counter = nullptr;
  decltype(&::nvmlDeviceGetCurrentClocksEventReasons) device_get_current_clocks_event_reasons = nullptr;
  // Deprecated in NVML 13 (cumulative throttle time by cause; nvml.h names nvmlDeviceGetFieldValues's
  // NVML_FI_DEV_CLOCKS_EVENT_REASON_* fields as its successor): typed by hand. The hardware slowdowns
  // (thermal, power brake) have no violation counter: they are read as field values.
  nvmlReturn_t (*device_get_violation_status)(nvmlDevice_t, nvmlPerfPolicyType_t,
                                              nvmlViolationTime_t*) = nullptr;
  decltype(&::nvmlDeviceGetFieldValues) device_get_field_values = nullptr;
  // Telemetry (harness/env/telemetry.hpp): sampled every second during a burn.
  decltype(&::nvmlDeviceGetPowerUsage) device_get_power_usage = nullptr;
  decltype(&::nvmlDeviceGetPcieReplayCounter) device_get_pcie_replay_counter = nullptr;
  decltype(&::nvmlEventSetCreate) event_set_create = nullptr;
  decltype(&::nvmlDeviceRegisterEvents) device_register_events = nullptr;
  decltype(&::nvmlEventSetWait_v2) event_set_wait_v2 = nullptr;
  decltype(&::nvmlEventSetFree) event_set_free = nullptr;
};

class NvmlLibrary {
 public:
  // Loads libnvidia-ml.so.1, resolves the entry points and calls nvmlInit_v2.
  NvmlLibrary() noexcept;
  ~NvmlLibrary();
  NvmlLibrary(NvmlLibrary&& other) noexcept;
  NvmlLibrary& operator=(NvmlLibrary&& other) noexcept;
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  // True when the shared library itself could be opened (it may still have failed to initialise).
  [[nodiscard]] bool loaded() const noexcept { return handle_ != nullptr; }
  // True when loaded, every required symbol resolved and nvmlInit_v2 succeeded.
  [[nodiscard]] bool usable() const noexcept { return initialised_; }
  // "ok", or why NVML cannot be used.
  [[nodiscard]] const std::string& status() const noexcept { return status_; }
  // The entry points; only meaningful when usable().
  [[nodiscard]] const NvmlApi& api() const noexcept { return api_; }

  // "580.159.04", or "" when NVML is unusable or the query fails.
  [[nodiscard]] std::string driver_version() const;
  // NVML's text for a return code ("Not Supported"), falling back to the number.
  [[nodiscard]] std::string error_text(nvmlReturn_t result) const;

 private:
  void release() noexcept;

  void* handle_ = nullptr;
  bool initialised_ = false;
  NvmlApi api_{};
  std::string status_;
};

// The NVML device of a GPU found through CUDA: by its PCI bus id, else its UUID. `why` says what went wrong
// ("NVML: not loadable: ...", "NVML has no GPU of PCI bus id ... or UUID ...") where `device` is none.
struct NvmlDeviceLookup {
  nvmlDevice_t device{};
  std::string why;
};
[[nodiscard]] NvmlDeviceLookup find_nvml_device(const NvmlLibrary& nvml, const std::string& pci_bus_id,
                                                const std::string& uuid);

}  // namespace memstress
