// collect_environment(): assembles the host, library, driver and GPU parts. NVML is opened for the
// duration of the collection only; every part that cannot be read says why or stays empty.

#include "harness/env/environment.hpp"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <utility>

#include "harness/core/text_file.hpp"
#include "harness/env/collect_parts.hpp"
#include "harness/env/nvml_gpu.hpp"
#include "harness/env/nvml_library.hpp"

namespace memstress {
namespace {

constexpr const char* kProcDriverVersion = "/proc/driver/nvidia/version";

// Driver version from NVML, else from the kernel module's /proc file; otherwise the source says why.
void collect_driver_version(const NvmlLibrary& nvml, Environment& env) {
  if (std::string version = nvml.driver_version(); !version.empty()) {
    env.driver_version = std::move(version);
    env.driver_version_source = "nvml";
    return;
  }
  const std::string nvml_reason =
      nvml.usable() ? std::string("nvmlSystemGetDriverVersion failed") : nvml.status();
  if (const std::optional<std::string> text = read_text_file(kProcDriverVersion)) {
    if (std::string version = parse_proc_driver_version(*text); !version.empty()) {
      env.driver_version = std::move(version);
      env.driver_version_source = kProcDriverVersion;
      return;
    }
    env.driver_version_source = fmt::format("no driver version: {} has no NVRM version line; NVML: {}",
                                            kProcDriverVersion, nvml_reason);
    return;
  }
  env.driver_version_source =
      nvml.loaded() ? fmt::format("no driver version: {} absent; NVML: {}", kProcDriverVersion, nvml_reason)
                    : fmt::format("no NVIDIA driver: {} absent and NVML not loadable", kProcDriverVersion);
}

}  // namespace

Environment collect_environment() {
  Environment env;
  env_detail::collect_host(env);
  env_detail::collect_library_versions(env);

  const NvmlLibrary nvml;
  env.nvml_status = nvml.status();
  collect_driver_version(nvml, env);

  env.gpus = env_detail::collect_cuda_gpus();
  for (GpuFacts& gpu : env.gpus) {
    if (!add_nvml_facts(nvml, gpu) && nvml.usable()) {
      env.nvml_status += fmt::format("; no NVML device matches GPU {} ({})", gpu.ordinal, gpu.pci_bus_id);
    }
  }
  return env;
}

}  // namespace memstress
