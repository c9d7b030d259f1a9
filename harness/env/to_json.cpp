// to_json(Environment): the nested, snake_case object stored with every run. Unknown facts are null,
// never a made-up 0 or "", so that comparisons across runs do not mistake "unknown" for a value.

#include <fmt/format.h>

#include <optional>
#include <string>
#include <utility>

#include "harness/env/environment.hpp"

namespace memstress {
namespace {

template <typename T>
nlohmann::json or_null(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json or_null(const std::string& text) {
  return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
}

// {"version": "13.0", "version_code": 13000}; version is null for 0 (no driver).
nlohmann::json cuda_version(int code) {
  return {{"version", code > 0 ? nlohmann::json(format_cuda_version(code)) : nlohmann::json(nullptr)},
          {"version_code", code}};
}

nlohmann::json gpu_json(const GpuFacts& gpu) {
  return {
      {"ordinal", gpu.ordinal},
      {"name", gpu.name},
      {"uuid", or_null(gpu.uuid)},
      {"pci_bus_id", or_null(gpu.pci_bus_id)},
      {"memory_bytes", gpu.memory_bytes},
      {"sm_count", gpu.sm_count},
      {"compute_capability", fmt::format("{}.{}", gpu.cc_major, gpu.cc_minor)},
      {"l2_bytes", gpu.l2_bytes},
      {"memory_bus_width_bits", gpu.memory_bus_width_bits},
      {"ecc_enabled", or_null(gpu.ecc_enabled)},
      {"sm_clock_mhz", or_null(gpu.sm_clock_mhz)},
      {"sm_clock_max_mhz", or_null(gpu.sm_clock_max_mhz)},
      {"memory_clock_mhz", or_null(gpu.memory_clock_mhz)},
      {"memory_clock_max_mhz", or_null(gpu.memory_clock_max_mhz)},
      {"pcie_link_gen", or_null(gpu.pcie_link_gen)},
      {"pcie_link_width", or_null(gpu.pcie_link_width)},
      {"power_limit_w", or_null(gpu.power_limit_w)},
      {"temperature_c", or_null(gpu.temperature_c)},
      {"persistence_mode", or_null(gpu.persistence_mode)},
      {"mig_enabled", or_null(gpu.mig_enabled)},
      {"vbios_version", or_null(gpu.vbios_version)},
      {"serial", or_null(gpu.serial)},
  };
}

}  // namespace

nlohmann::json to_json(const Environment& env) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const GpuFacts& gpu : env.gpus) {
    gpus.push_back(gpu_json(gpu));
  }
  nlohmann::json variables = nlohmann::json::object();
  for (const auto& [name, value] : env.variables) {
    variables[name] = value;
  }
  const nlohmann::json cuda_driver = cuda_version(env.cuda_driver_version);
  return {
      {"host",
       {{"name", env.hostname},
        {"os", or_null(env.os)},
        {"kernel", or_null(env.kernel)},
        {"cpu_model", or_null(env.cpu_model)},
        {"cpu_count", env.cpu_count},
        {"memory_bytes", env.host_memory_bytes}}},
      {"driver",
       {{"version", or_null(env.driver_version)},
        {"source", env.driver_version_source},
        {"cuda_driver_version", cuda_driver["version"]},
        {"cuda_driver_version_code", env.cuda_driver_version},
        {"nvml", env.nvml_status}}},
      {"cuda_runtime", cuda_version(env.cuda_runtime_version)},
      {"nccl", {{"version", env.nccl_version}}},
      {"mpi", {{"library", env.mpi_library}, {"standard", env.mpi_standard}}},
      {"gpus", std::move(gpus)},
      {"variables", std::move(variables)},
  };
}

}  // namespace memstress
