// Unit tests of harness/env: the pure parsing helpers on fixed text, the formatting of a made-up GPU,
// and collect_environment() on whatever machine runs them (a CPU-only one in CI: it must not throw).

#include <gtest/gtest.h>
#include <stdlib.h>  // setenv, unsetenv (POSIX)

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "harness/env/environment.hpp"
#include "harness/env/nvml_library.hpp"
#include "harness/env/parse_detail.hpp"

namespace memstress {
namespace {

TEST(EnvironmentParse, ProcDriverVersionProprietaryModule) {
  const std::string text =
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu Oct 30 12:00:00 UTC 2025\n"
      "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";
  EXPECT_EQ(parse_proc_driver_version(text), "580.159.04");
}

TEST(EnvironmentParse, ProcDriverVersionOpenModule) {
  const std::string text =
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  "
      "(dvs-builder@U16-I1-N08-12-3)  Tue Sep 23 09:37:32 UTC 2025\n"
      "GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n";
  EXPECT_EQ(parse_proc_driver_version(text), "580.95.05");
}

TEST(EnvironmentParse, ProcDriverVersionAbsent) {
  EXPECT_EQ(parse_proc_driver_version(""), "");
  EXPECT_EQ(parse_proc_driver_version("GCC version:  gcc version 12.2.0\n"), "");
  EXPECT_EQ(parse_proc_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module\n"), "");
}

TEST(EnvironmentParse, CpuinfoModel) {
  const std::string text =
      "processor\t: 0\n"
      "vendor_id\t: GenuineIntel\n"
      "model\t\t: 143\n"
      "model name\t: Intel(R) Xeon(R) Platinum 8480+\n"
      "processor\t: 1\n"
      "model name\t: Some Other CPU\n";
  EXPECT_EQ(parse_cpuinfo_model(text), "Intel(R) Xeon(R) Platinum 8480+");
}

TEST(EnvironmentParse, CpuinfoModelAbsent) {
  EXPECT_EQ(parse_cpuinfo_model(""), "");
  EXPECT_EQ(parse_cpuinfo_model("processor\t: 0\nBogoMIPS\t: 50.00\nCPU part\t: 0xd4f\n"), "");
}

TEST(EnvironmentParse, OsReleasePrettyName) {
  const std::string text =
      "NAME=\"Ubuntu\"\n"
      "VERSION_ID=\"24.04\"\n"
      "PRETTY_NAME=\"Ubuntu 24.04.1 LTS\"\n"
      "ID=ubuntu\n";
  EXPECT_EQ(parse_os_release_pretty_name(text), "Ubuntu 24.04.1 LTS");
  EXPECT_EQ(parse_os_release_pretty_name("PRETTY_NAME=Plain\n"), "Plain");
  EXPECT_EQ(parse_os_release_pretty_name("PRETTY_NAME='Single Quoted'"), "Single Quoted");
  EXPECT_EQ(parse_os_release_pretty_name("PRETTY_NAME=\"Say \\\"hi\\\"\"\n"), "Say \"hi\"");
}

TEST(EnvironmentParse, OsReleasePrettyNameAbsent) {
  EXPECT_EQ(parse_os_release_pretty_name(""), "");
  EXPECT_EQ(parse_os_release_pretty_name("NAME=\"Debian GNU/Linux\"\nXPRETTY_NAME=\"no\"\n"), "");
}

TEST(EnvironmentParse, NcclVersion) {
  EXPECT_EQ(format_nccl_version(22809), "2.28.9");
  EXPECT_EQ(format_nccl_version(21903), "2.19.3");
  EXPECT_EQ(format_nccl_version(20900), "2.9.0");
  EXPECT_EQ(format_nccl_version(2708), "2.7.8");  // the code before 2.9: major*1000 + minor*100 + patch
  EXPECT_EQ(format_nccl_version(0), "unknown");
}

TEST(EnvironmentParse, CudaVersion) {
  EXPECT_EQ(format_cuda_version(13000), "13.0");
  EXPECT_EQ(format_cuda_version(12040), "12.4");
  EXPECT_EQ(format_cuda_version(12090), "12.9");
  EXPECT_EQ(format_cuda_version(0), "none");
}

TEST(EnvironmentParse, TrimAndFirstLine) {
  EXPECT_EQ(env_detail::trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(env_detail::trim(" \n "), "");
  EXPECT_EQ(env_detail::first_line_trimmed("Open MPI v4.1.6, package: Debian\n  more\n"),
            "Open MPI v4.1.6, package: Debian");
  EXPECT_EQ(env_detail::first_line_trimmed("\nMPICH Version:\t4.0.2\nMPICH Release date: x\n"),
            "MPICH Version:\t4.0.2");
  EXPECT_EQ(env_detail::first_line_trimmed(""), "");
}

TEST(EnvironmentParse, RecordedVariableNames) {
  EXPECT_TRUE(env_detail::is_recorded_variable("CUDA_VISIBLE_DEVICES"));
  EXPECT_TRUE(env_detail::is_recorded_variable("CUDA_DEVICE_ORDER"));
  EXPECT_TRUE(env_detail::is_recorded_variable("NVIDIA_VISIBLE_DEVICES"));
  EXPECT_TRUE(env_detail::is_recorded_variable("PYTORCH_CUDA_ALLOC_CONF"));
  EXPECT_TRUE(env_detail::is_recorded_variable("PYTORCH_ALLOC_CONF"));
  EXPECT_TRUE(env_detail::is_recorded_variable("NCCL_DEBUG"));
  EXPECT_TRUE(env_detail::is_recorded_variable("OMPI_COMM_WORLD_RANK"));
  EXPECT_TRUE(env_detail::is_recorded_variable("MEMSTRESS_ANYTHING"));
  EXPECT_FALSE(env_detail::is_recorded_variable("PATH"));
  EXPECT_FALSE(env_detail::is_recorded_variable("CUDA_VISIBLE_DEVICES_X"));
  EXPECT_FALSE(env_detail::is_recorded_variable("NCCL"));
  EXPECT_FALSE(env_detail::is_recorded_variable("OMPI_MCA_btl"));
}

TEST(EnvironmentParse, RecordedVariablesSortedAndFiltered) {
  const std::vector<const char*> entries = {"PATH=/usr/bin",
                                            "NCCL_PROTO=Simple",
                                            "CUDA_VISIBLE_DEVICES=",
                                            "NCCL_DEBUG=INFO=x",
                                            "NOEQUALS",
                                            "MEMSTRESS_SEED=7",
                                            nullptr};
  const std::vector<std::pair<std::string, std::string>> expected = {{"CUDA_VISIBLE_DEVICES", ""},
                                                                     {"MEMSTRESS_SEED", "7"},
                                                                     {"NCCL_DEBUG", "INFO=x"},
                                                                     {"NCCL_PROTO", "Simple"}};
  EXPECT_EQ(env_detail::recorded_variables(entries.data()), expected);
  EXPECT_TRUE(env_detail::recorded_variables(nullptr).empty());
}

GpuFacts h200() {
  GpuFacts gpu;
  gpu.ordinal = 0;
  gpu.name = "NVIDIA H200";
  gpu.uuid = "GPU-01234567-89ab-cdef-0123-456789abcdef";
  gpu.pci_bus_id = "0000:19:00.0";
  gpu.memory_bytes = 141ULL << 30U;
  gpu.sm_count = 132;
  gpu.cc_major = 9;
  gpu.cc_minor = 0;
  gpu.l2_bytes = 60ULL << 20U;
  gpu.memory_bus_width_bits = 6144;
  gpu.ecc_enabled = true;
  gpu.sm_clock_mhz = 1980;
  gpu.sm_clock_max_mhz = 1980;
  gpu.memory_clock_mhz = 3201;
  gpu.memory_clock_max_mhz = 3201;
  gpu.pcie_link_gen = 5;
  gpu.pcie_link_width = 16;
  gpu.power_limit_w = 700.0;
  return gpu;
}

TEST(EnvironmentFormat, GpuLines) {
  Environment env;
  env.hostname = "gpu-node-1";
  env.os = "Ubuntu 24.04.1 LTS";
  env.kernel = "6.8.0";
  env.cpu_model = "Intel(R) Xeon(R) Platinum 8480+";
  env.cpu_count = 16;
  env.host_memory_bytes = 128ULL << 30U;
  env.driver_version = "580.159.04";
  env.driver_version_source = "nvml";
  env.nvml_status = "ok";
  env.cuda_driver_version = 13000;
  env.cuda_runtime_version = 13000;
  env.nccl_version = "2.28.3";
  env.mpi_library = "Open MPI v4.1.6, package: Open MPI Distribution, ident: 4.1.6";
  env.mpi_standard = "3.1";
  env.gpus.push_back(h200());
  env.variables = {{"CUDA_VISIBLE_DEVICES", "0"}};

  const std::string text = format_environment(env);
  EXPECT_NE(text.find("host      gpu-node-1 (Ubuntu 24.04.1 LTS, kernel 6.8.0, Intel(R) Xeon(R) Platinum "
                      "8480+ x 16, 128.0 GiB)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("driver    580.159.04 (nvml); CUDA driver 13.0, runtime 13.0; NCCL 2.28.3; MPI Open MPI "
                "v4.1.6 (3.1)\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("GPU 0     NVIDIA H200  GPU-01234567-89ab-cdef-0123-456789abcdef  0000:19:00.0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("          141.0 GiB, 132 SMs, sm_90, L2 60.0 MiB, ECC on, SM 1980/1980 MHz, "
                      "mem 3201/3201 MHz, PCIe gen5 x16, 700 W\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("env       CUDA_VISIBLE_DEVICES=0\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("no CUDA device found"), std::string::npos) << text;
  EXPECT_EQ(text.find("nvml      "), std::string::npos) << text;
}

TEST(EnvironmentFormat, NoGpu) {
  Environment env;
  env.nvml_status = "libnvidia-ml.so.1 not loadable: no such file";
  const std::string text = format_environment(env);
  EXPECT_NE(text.find("no CUDA device found"), std::string::npos) << text;
  EXPECT_NE(text.find("nvml      libnvidia-ml.so.1 not loadable"), std::string::npos) << text;
  EXPECT_NE(text.find("driver    none"), std::string::npos) << text;
}

TEST(EnvironmentJson, GpuKnownAndUnknownFacts) {
  Environment env;
  env.gpus.push_back(h200());
  const nlohmann::json json = to_json(env);
  const nlohmann::json& gpu = json.at("gpus").at(0);
  EXPECT_EQ(gpu.at("name"), "NVIDIA H200");
  EXPECT_EQ(gpu.at("compute_capability"), "9.0");
  EXPECT_EQ(gpu.at("memory_bytes"), 141ULL << 30U);
  EXPECT_EQ(gpu.at("ecc_enabled"), true);
  EXPECT_EQ(gpu.at("sm_clock_max_mhz"), 1980);
  EXPECT_EQ(gpu.at("power_limit_w"), 700.0);
  EXPECT_TRUE(gpu.at("temperature_c").is_null());
  EXPECT_TRUE(gpu.at("mig_enabled").is_null());
  EXPECT_TRUE(gpu.at("vbios_version").is_null());
  EXPECT_TRUE(json.at("driver").at("cuda_driver_version").is_null());
  EXPECT_EQ(json.at("driver").at("cuda_driver_version_code"), 0);
}

TEST(NvmlLibrary, NeverThrowsAndMoves) {
  NvmlLibrary nvml;
  EXPECT_FALSE(nvml.status().empty());
  EXPECT_EQ(nvml.usable(), nvml.status() == "ok");
  const std::string status = nvml.status();
  const bool loaded = nvml.loaded();
  NvmlLibrary moved(std::move(nvml));
  EXPECT_EQ(moved.status(), status);
  EXPECT_EQ(moved.loaded(), loaded);
  NvmlLibrary assigned;
  assigned = std::move(moved);
  EXPECT_EQ(assigned.status(), status);
  if (!assigned.usable()) {
    EXPECT_EQ(assigned.driver_version(), "");
  }
}

// Runs on any machine; the CPU-only CI machine checks the "no driver" paths.
TEST(EnvironmentCollect, NeverThrows) {
  ASSERT_EQ(setenv("MEMSTRESS_TEST_ENVIRONMENT_MARK", "42", 1), 0);
  Environment env;
  ASSERT_NO_THROW(env = collect_environment());
  unsetenv("MEMSTRESS_TEST_ENVIRONMENT_MARK");

  EXPECT_GT(env.cuda_runtime_version, 0);
  EXPECT_FALSE(env.nccl_version.empty());
  EXPECT_NE(env.nccl_version.rfind("unknown", 0), 0U) << env.nccl_version;
  EXPECT_FALSE(env.mpi_library.empty());
  EXPECT_FALSE(env.mpi_standard.empty());
  EXPECT_FALSE(env.nvml_status.empty());
  EXPECT_FALSE(env.driver_version_source.empty());
  EXPECT_FALSE(env.hostname.empty());
  EXPECT_FALSE(env.kernel.empty());
  EXPECT_GT(env.cpu_count, 0);
  EXPECT_GT(env.host_memory_bytes, 0U);
  EXPECT_NE(std::find(env.variables.begin(), env.variables.end(),
                      std::pair<std::string, std::string>{"MEMSTRESS_TEST_ENVIRONMENT_MARK", "42"}),
            env.variables.end());
  if (env.cuda_driver_version == 0) {  // no driver: no device, and the format says so
    EXPECT_TRUE(env.gpus.empty());
    EXPECT_NE(format_environment(env).find("no CUDA device found"), std::string::npos);
  }
  if (env.driver_version.empty()) {
    EXPECT_NE(env.driver_version_source, "nvml");
  }
}

TEST(EnvironmentCollect, JsonHasTheKeys) {
  const nlohmann::json json = to_json(collect_environment());
  for (const char* key : {"host", "driver", "cuda_runtime", "nccl", "mpi", "gpus", "variables"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  for (const char* key : {"name", "os", "kernel", "cpu_model", "cpu_count", "memory_bytes"}) {
    EXPECT_TRUE(json.at("host").contains(key)) << key;
  }
  for (const char* key : {"version", "source", "cuda_driver_version", "cuda_driver_version_code", "nvml"}) {
    EXPECT_TRUE(json.at("driver").contains(key)) << key;
  }
  EXPECT_TRUE(json.at("cuda_runtime").at("version").is_string());
  EXPECT_GT(json.at("cuda_runtime").at("version_code").get<int>(), 0);
  EXPECT_TRUE(json.at("nccl").at("version").is_string());
  EXPECT_TRUE(json.at("mpi").contains("library"));
  EXPECT_TRUE(json.at("mpi").contains("standard"));
  EXPECT_TRUE(json.at("gpus").is_array());
  EXPECT_TRUE(json.at("variables").is_object());
}

}  // namespace
}  // namespace memstress
