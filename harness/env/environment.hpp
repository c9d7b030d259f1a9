#pragma once

// What a run ran on: host, driver, CUDA, NCCL, MPI and every GPU. Collected once per rank at the
// start of a run and stored in the results, so that runs can be compared across drivers and GPUs.
// Collection never fails: a part that cannot be read says why in its place.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace memstress {

struct GpuFacts {
  int ordinal = 0;                 // CUDA device ordinal (after CUDA_VISIBLE_DEVICES)
  std::string name;                // "NVIDIA H200"
  std::string uuid;                // "GPU-…"
  std::string pci_bus_id;          // "0000:19:00.0"
  std::uint64_t memory_bytes = 0;  // total global memory
  int sm_count = 0;
  int cc_major = 0;
  int cc_minor = 0;
  std::uint64_t l2_bytes = 0;
  int memory_bus_width_bits = 0;
  std::optional<bool> ecc_enabled;          // from the CUDA runtime, else NVML
  std::optional<int> sm_clock_mhz;          // current (NVML)
  std::optional<int> sm_clock_max_mhz;      // maximum (NVML, else the CUDA attribute)
  std::optional<int> memory_clock_mhz;      // current (NVML)
  std::optional<int> memory_clock_max_mhz;  // maximum (NVML, else the CUDA attribute)
  std::optional<int> pcie_link_gen;         // current (NVML)
  std::optional<int> pcie_link_width;       // current (NVML)
  std::optional<double> power_limit_w;      // enforced (NVML)
  std::optional<int> temperature_c;         // (NVML)
  std::optional<bool> persistence_mode;     // (NVML)
  std::optional<bool> mig_enabled;          // (NVML)
  std::string vbios_version;                // (NVML), empty if unknown
  std::string serial;                       // (NVML), empty if unknown
};

struct Environment {
  std::string hostname;
  std::string os;         // PRETTY_NAME from /etc/os-release
  std::string kernel;     // uname -r
  std::string cpu_model;  // /proc/cpuinfo "model name"
  int cpu_count = 0;      // logical CPUs usable
  std::uint64_t host_memory_bytes = 0;

  std::string driver_version;  // "580.159.04" from NVML, else /proc/driver/nvidia/version; empty if none
  std::string driver_version_source;  // "nvml", "/proc/driver/nvidia/version" or why there is none
  int cuda_driver_version = 0;        // cudaDriverGetVersion, e.g. 13000; 0 without a driver
  int cuda_runtime_version = 0;       // cudaRuntimeGetVersion (static runtime: the one built with)
  std::string nccl_version;           // "2.28.3" from ncclGetVersion (the library loaded)
  std::string mpi_library;            // MPI_Get_library_version, first line
  std::string mpi_standard;           // "3.1"
  std::string nvml_status;            // "ok" or why NVML could not be used

  std::vector<GpuFacts> gpus;
  std::vector<std::pair<std::string, std::string>> variables;  // CUDA_VISIBLE_DEVICES, NCCL_*, …
};

Environment collect_environment();

nlohmann::json to_json(const Environment& env);

// Human-readable, for `memstress devices` (table format).
std::string format_environment(const Environment& env);

// Parsing helpers, separate so they are unit-tested on fixed text.
// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu …" -> "580.159.04"; "" if absent.
std::string parse_proc_driver_version(const std::string& text);
// The first "model name" of /proc/cpuinfo text; "" if absent.
std::string parse_cpuinfo_model(const std::string& text);
// PRETTY_NAME of /etc/os-release text, unquoted; "" if absent.
std::string parse_os_release_pretty_name(const std::string& text);
// 22809 -> "2.28.9" (NCCL's version code: major*10000 + minor*100 + patch since 2.9).
std::string format_nccl_version(int code);
// 13000 -> "13.0", 12040 -> "12.4"; 0 -> "none".
std::string format_cuda_version(int version);

}  // namespace memstress
