// format_environment(): the readable table of `memstress devices`, one labelled line per fact group.
//
//   host      gpu-node-1 (Ubuntu 24.04.1 LTS, kernel 6.8.0, Intel(R) Xeon(R) … x 16, 128.0 GiB)
//   driver    580.159.04 (nvml); CUDA driver 13.0, runtime 13.0; NCCL 2.28.3; MPI Open MPI v4.1.6 (3.1)
//   GPU 0     NVIDIA H200  GPU-…  0000:19:00.0
//             141.0 GiB, 132 SMs, sm_90, L2 60.0 MiB, ECC on, SM 1980/1980 MHz, mem 3201/3201 MHz, …
//
// Unknown facts are left out rather than printed as "?".

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/env/environment.hpp"

namespace memstress {
namespace {

constexpr int kLabelWidth = 10;

// 141.0 GiB, 60.0 MiB, 512 B: binary units with one decimal.
std::string binary_size(std::uint64_t bytes) {
  constexpr std::array<std::string_view, 5> kUnits = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) {
    return fmt::format("{} B", bytes);
  }
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  for (value /= 1024.0; value >= 1024.0 && unit + 1 < kUnits.size(); value /= 1024.0) {
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  return fmt::format("{}", fmt::join(parts, separator));
}

void append_line(std::string& out, std::string_view label, std::string_view text) {
  fmt::format_to(std::back_inserter(out), "{:<{}}{}\n", label, kLabelWidth, text);
}

// "Open MPI v4.1.6, package: Debian OpenMPI, …" -> "Open MPI v4.1.6": the part before the first comma.
std::string_view short_mpi_library(std::string_view library) {
  return library.substr(0, library.find(','));
}

std::string on_off(bool value) {
  return value ? "on" : "off";
}

// "1980/1980 MHz", "max 1980 MHz", "1410 MHz"; empty when neither is known.
std::string clock_pair(std::optional<int> current, std::optional<int> max) {
  if (current && max) {
    return fmt::format("{}/{} MHz", *current, *max);
  }
  if (max) {
    return fmt::format("max {} MHz", *max);
  }
  if (current) {
    return fmt::format("{} MHz", *current);
  }
  return {};
}

std::string host_line(const Environment& env) {
  std::vector<std::string> parts;
  if (!env.os.empty()) {
    parts.push_back(env.os);
  }
  if (!env.kernel.empty()) {
    parts.push_back("kernel " + env.kernel);
  }
  parts.push_back(env.cpu_model.empty() ? fmt::format("{} CPUs", env.cpu_count)
                                        : fmt::format("{} x {}", env.cpu_model, env.cpu_count));
  if (env.host_memory_bytes > 0) {
    parts.push_back(binary_size(env.host_memory_bytes));
  }
  return fmt::format("{} ({})", env.hostname.empty() ? "unknown" : env.hostname, join(parts, ", "));
}

std::string driver_line(const Environment& env) {
  return fmt::format("{} ({}); CUDA driver {}, runtime {}; NCCL {}; MPI {} ({})",
                     env.driver_version.empty() ? "none" : env.driver_version, env.driver_version_source,
                     format_cuda_version(env.cuda_driver_version),
                     format_cuda_version(env.cuda_runtime_version), env.nccl_version,
                     short_mpi_library(env.mpi_library), env.mpi_standard);
}

// The second line of a GPU: capacity, shape and the clocks/link/power it runs at.
std::string gpu_shape_line(const GpuFacts& gpu) {
  std::vector<std::string> parts = {binary_size(gpu.memory_bytes), fmt::format("{} SMs", gpu.sm_count),
                                    fmt::format("sm_{}{}", gpu.cc_major, gpu.cc_minor)};
  if (gpu.l2_bytes > 0) {
    parts.push_back("L2 " + binary_size(gpu.l2_bytes));
  }
  if (gpu.ecc_enabled) {
    parts.push_back("ECC " + on_off(*gpu.ecc_enabled));
  }
  if (std::string sm = clock_pair(gpu.sm_clock_mhz, gpu.sm_clock_max_mhz); !sm.empty()) {
    parts.push_back("SM " + sm);
  }
  if (std::string mem = clock_pair(gpu.memory_clock_mhz, gpu.memory_clock_max_mhz); !mem.empty()) {
    parts.push_back("mem " + mem);
  }
  if (gpu.pcie_link_gen && gpu.pcie_link_width) {
    parts.push_back(fmt::format("PCIe gen{} x{}", *gpu.pcie_link_gen, *gpu.pcie_link_width));
  }
  if (gpu.power_limit_w) {
    parts.push_back(fmt::format("{:.0f} W", *gpu.power_limit_w));
  }
  return join(parts, ", ");
}

// The third line of a GPU (NVML only): identity and modes; empty when NVML said nothing.
std::string gpu_state_line(const GpuFacts& gpu) {
  std::vector<std::string> parts;
  if (!gpu.vbios_version.empty()) {
    parts.push_back("VBIOS " + gpu.vbios_version);
  }
  if (!gpu.serial.empty()) {
    parts.push_back("serial " + gpu.serial);
  }
  if (gpu.temperature_c) {
    parts.push_back(fmt::format("{} C", *gpu.temperature_c));
  }
  if (gpu.persistence_mode) {
    parts.push_back("persistence " + on_off(*gpu.persistence_mode));
  }
  if (gpu.mig_enabled) {
    parts.push_back("MIG " + on_off(*gpu.mig_enabled));
  }
  return join(parts, ", ");
}

}  // namespace

std::string format_environment(const Environment& env) {
  std::string out;
  append_line(out, "host", host_line(env));
  append_line(out, "driver", driver_line(env));
  if (env.nvml_status != "ok") {
    append_line(out, "nvml", env.nvml_status);
  }
  if (env.gpus.empty()) {
    append_line(out, "GPU", "no CUDA device found");
  }
  for (const GpuFacts& gpu : env.gpus) {
    append_line(out, fmt::format("GPU {}", gpu.ordinal),
                fmt::format("{}  {}  {}", gpu.name, gpu.uuid, gpu.pci_bus_id));
    append_line(out, "", gpu_shape_line(gpu));
    if (std::string state = gpu_state_line(gpu); !state.empty()) {
      append_line(out, "", state);
    }
  }
  for (const auto& [name, value] : env.variables) {
    append_line(out, "env", fmt::format("{}={}", name, value));
  }
  return out;
}

}  // namespace memstress
