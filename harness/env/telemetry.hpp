#pragma once

// What a burn samples every second (harness/burn/sampler.hpp): power, temperatures, clocks, the reasons the
// clocks are held down at that moment, and the PCIe replay counter. Read through NVML on a CUDA GPU; on the
// simulated device there is nothing to read (null), and tests lay readings of their own over a burn's.
//
// A figure NVML does not give on this GPU (HBM temperature on a board without the sensor, the replay counter
// on a driver without it) is left empty, never guessed.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memstress {

struct TelemetrySample {
  std::optional<double> power_w;        // board power now
  std::optional<double> power_limit_w;  // the enforced limit
  std::optional<double> gpu_temp_c;
  std::optional<double> hbm_temp_c;
  std::optional<double> sm_clock_mhz;
  std::optional<double> mem_clock_mhz;
  std::optional<std::uint64_t> reasons;       // NVML's clock event reasons now (a bit mask, below)
  std::optional<std::uint64_t> pcie_replays;  // since the driver loaded
  std::vector<std::string> errors;            // queries that failed otherwise (the GPU lost): not healthy
};

// NVML's clock event reasons, by the names a burn profile allows them by.
struct ClockReason {
  std::uint64_t bit;
  std::string_view name;  // "sw_power_cap"
};
[[nodiscard]] const std::vector<ClockReason>& clock_reasons();
// The names of the bits set in `mask` ("sw_power_cap+sync_boost"; "none").
[[nodiscard]] std::string clock_reason_names(std::uint64_t mask);
// The bit of a reason's name, or nullopt for an unknown name.
[[nodiscard]] std::optional<std::uint64_t> clock_reason_bit(std::string_view name);

class Telemetry {
 public:
  virtual ~Telemetry() = default;
  Telemetry() = default;
  Telemetry(const Telemetry&) = delete;
  Telemetry& operator=(const Telemetry&) = delete;
  Telemetry(Telemetry&&) = delete;
  Telemetry& operator=(Telemetry&&) = delete;

  // Why nothing can be read, or "" when read() gives figures.
  [[nodiscard]] virtual std::string unavailable() const = 0;
  [[nodiscard]] virtual TelemetrySample read() = 0;
};

// The GPU of that PCI bus id (else UUID) through NVML. Never throws: unavailable() says why it cannot read.
[[nodiscard]] std::unique_ptr<Telemetry> nvml_telemetry(const std::string& pci_bus_id,
                                                        const std::string& uuid);

}  // namespace memstress
