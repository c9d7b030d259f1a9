// Telemetry read through the run-time loaded NVML (telemetry.hpp).

#include <fmt/format.h>

#include "harness/env/nvml_gpu.hpp"
#include "harness/env/nvml_library.hpp"
#include "harness/env/telemetry.hpp"

namespace memstress {
namespace {

// The HBM temperature has no query of its own: NVML gives it as a field value (the id is the driver's ABI).
constexpr unsigned int kFieldMemoryTemp = 82;
#ifdef NVML_FI_DEV_MEMORY_TEMP
static_assert(NVML_FI_DEV_MEMORY_TEMP == kFieldMemoryTemp);
#endif

class NvmlTelemetry final : public Telemetry {
 public:
  NvmlTelemetry(const std::string& pci_bus_id, const std::string& uuid) {
    const NvmlDeviceLookup found = find_nvml_device(nvml_, pci_bus_id, uuid);
    why_ = found.why;
    device_ = found.device;
  }

  [[nodiscard]] std::string unavailable() const override { return why_; }

  [[nodiscard]] TelemetrySample read() override {
    TelemetrySample s;
    if (!why_.empty()) {
      return s;
    }
    const NvmlApi& api = nvml_.api();
    unsigned int v = 0;
    if (ask(s, "power", api.device_get_power_usage, &v)) {
      s.power_w = v / 1000.0;
    }
    if (ask(s, "power limit", api.device_get_enforced_power_limit, &v)) {
      s.power_limit_w = v / 1000.0;
    }
    if (const std::optional<int> t = nvml_gpu_temperature(api, device_)) {
      s.gpu_temp_c = *t;
    }
    if (api.device_get_clock_info != nullptr) {
      if (api.device_get_clock_info(device_, NVML_CLOCK_SM, &v) == NVML_SUCCESS) {
        s.sm_clock_mhz = v;
      }
      if (api.device_get_clock_info(device_, NVML_CLOCK_MEM, &v) == NVML_SUCCESS) {
        s.mem_clock_mhz = v;
      }
    }
    unsigned long long reasons = 0;
    if (ask(s, "clock event reasons", api.device_get_current_clocks_event_reasons, &reasons)) {
      s.reasons = reasons;
    }
    if (ask(s, "PCIe replay counter", api.device_get_pcie_replay_counter, &v)) {
      s.pcie_replays = v;
    }
    if (api.device_get_field_values != nullptr) {
      nvmlFieldValue_t field{};
      field.fieldId = kFieldMemoryTemp;
      if (api.device_get_field_values(device_, 1, &field) == NVML_SUCCESS &&
          field.nvmlReturn == NVML_SUCCESS) {
        s.hbm_temp_c = static_cast<double>(field.value.uiVal);
      }
    }
    return s;
  }

 private:
  // fn(device, out): true on success; NOT_SUPPORTED (and an absent entry point) leave the figure empty, any
  // other failure is an error of the reading.
  template <typename Fn, typename T>
  bool ask(TelemetrySample& s, const char* what, Fn fn, T* out) {
    if (fn == nullptr) {
      return false;
    }
    const nvmlReturn_t r = fn(device_, out);
    if (r != NVML_SUCCESS && r != NVML_ERROR_NOT_SUPPORTED) {
      s.errors.push_back(fmt::format("{}: {}", what, nvml_.error_text(r)));
    }
    return r == NVML_SUCCESS;
  }

  NvmlLibrary nvml_;
  nvmlDevice_t device_{};
  std::string why_;
};

}  // namespace

std::unique_ptr<Telemetry> nvml_telemetry(const std::string& pci_bus_id, const std::string& uuid) {
  return std::make_unique<NvmlTelemetry>(pci_bus_id, uuid);
}

}  // namespace memstress
