#pragma once

// The parts collect_environment() is assembled from, one file each: host.cpp (host and variables),
// libraries.cpp (CUDA driver/runtime, NCCL and MPI versions), cuda_gpus.cpp (GPUs seen by CUDA).
// None of them throws for a missing driver or device; what cannot be read stays empty.

#include <string>
#include <vector>

#include "harness/env/environment.hpp"

namespace memstress::env_detail {

// hostname, os, kernel, cpu_model, cpu_count, host_memory_bytes and the recorded variables.
void collect_host(Environment& env);

// cuda_driver_version, cuda_runtime_version, nccl_version, mpi_library and mpi_standard.
void collect_library_versions(Environment& env);

// Every device the CUDA runtime sees (after CUDA_VISIBLE_DEVICES), with the facts CUDA knows;
// empty when there is no driver or no device.
std::vector<GpuFacts> collect_cuda_gpus();

}  // namespace memstress::env_detail
