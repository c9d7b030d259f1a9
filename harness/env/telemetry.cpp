// The names of NVML's clock event reasons (telemetry.hpp).

#include "harness/env/telemetry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace memstress {

const std::vector<ClockReason>& clock_reasons() {
  // nvml.h's nvmlClocksEventReason* bits, written out: the ids are the driver's ABI.
  static const std::vector<ClockReason> kReasons = {
      {0x1, "idle"},        {0x2, "applications_clocks"}, {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"}, {0x10, "sync_boost"},         {0x20, "sw_thermal"},
      {0x40, "hw_thermal"}, {0x80, "hw_power_brake"},     {0x100, "display_clocks"},
  };
  return kReasons;
}

std::string clock_reason_names(std::uint64_t mask) {
  std::vector<std::string> names;
  std::uint64_t known = 0;
  for (const ClockReason& r : clock_reasons()) {
    known |= r.bit;
    if ((mask & r.bit) != 0) {
      names.emplace_back(r.name);
    }
  }
  if ((mask & ~known) != 0) {
    names.push_back(fmt::format("{:#x}", mask & ~known));
  }
  return names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, "+"));
}

std::optional<std::uint64_t> clock_reason_bit(std::string_view name) {
  for (const ClockReason& r : clock_reasons()) {
    if (r.name == name) {
      return r.bit;
    }
  }
  return std::nullopt;
}

}  // namespace memstress
