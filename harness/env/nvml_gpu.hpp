#pragma once

// Fills the NVML-only facts of a GPU found through CUDA (clocks, PCIe link, power limit, temperature,
// persistence and MIG modes, VBIOS, serial). The NVML device is found by PCI bus id, else by UUID.

#include <optional>

#include "harness/env/environment.hpp"
#include "harness/env/nvml_library.hpp"

namespace memstress {

// Returns false when NVML is unusable or has no device matching `gpu`; each fact NVML cannot give
// (NVML_ERROR_NOT_SUPPORTED, a missing entry point, …) is left as it was.
bool add_nvml_facts(const NvmlLibrary& nvml, GpuFacts& gpu);

// The GPU's temperature in degrees C (the newer query where the driver has it), or nullopt.
[[nodiscard]] std::optional<int> nvml_gpu_temperature(const NvmlApi& api, nvmlDevice_t device);

}  // namespace memstress
