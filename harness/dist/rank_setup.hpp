#pragma once

// What `run` sets up per rank in a job: which GPU the rank drives, every rank's environment on rank 0,
// and the NCCL communicator over all ranks on a real GPU.

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

#include "harness/memory/device_spec.hpp"

namespace memstress {

class DeviceBackend;
class NcclComm;
class World;

// --device for this rank: in a job of several ranks, "auto" and "cuda" mean the GPU numbered by the
// local rank (one rank, one GPU; EnvironmentError when the host has fewer GPUs than ranks); cuda:N and
// sim keep their meaning on every rank.
DeviceSpec rank_device(std::string_view flag, const World& world);

// A file each rank writes (--alloc-trace, --snapshot): FILE on rank 0, and FILE with ".rankN" before the
// extension on each other rank of a job.
std::filesystem::path rank_path(const std::filesystem::path& path, const World& world);

// {"ranks": [...]} on rank 0, one entry per rank in rank order: its environment (`local`, as
// harness/env collects it) with "rank", "local_rank" and "device" (label, UUID and PCI bus id of the GPU
// it drives; empty on the simulated device). Other ranks get null. Collective.
nlohmann::json gather_environment(World& world, nlohmann::json local, const DeviceBackend& backend);

// The communicator over all ranks on the rank's GPU, or null on the simulated device. In a world of one
// a communicator that cannot be made is noted and null too (workloads that need one skip); with several
// ranks that is an error, thrown. Collective.
std::unique_ptr<NcclComm> make_nccl(World& world, const DeviceBackend& backend);

}  // namespace memstress
