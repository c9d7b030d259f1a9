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
struct DeviceInfo;
class NcclComm;
class World;

// Note [A GPU for each rank]
// In a job of several ranks, --device "auto" and "cuda" give each rank a GPU of its own. Under mpirun every
// rank of a host sees all its GPUs and takes the one numbered by its rank on the host (host_rank). Under a
// launcher that binds GPUs to tasks (Slurm's --gpus-per-task=1, a site's per-rank CUDA_VISIBLE_DEVICES) each
// rank sees exactly one GPU, its own, as cuda:0 whatever its rank: it drives that one. cuda:N and sim keep
// their meaning on every rank. Two ranks on one GPU are refused either way: where a rank sees several GPUs,
// one whose host rank is past the last (EnvironmentError, before any device is touched); and, since ranks
// that each see one GPU may have been shown the same one (mpirun -np 2 on a host of one GPU),
// check_one_rank_per_gpu compares the GPUs' UUIDs once each rank has opened its own.

// The device `text` (read from `what`, the command's flag, named in the errors) for this rank (Note [A GPU
// for each rank]), with the number of GPUs this rank sees.
DeviceSpec rank_device(std::string_view text, std::string_view what, const World& world, int visible_gpus);
// The same, with the GPUs CUDA shows this process.
DeviceSpec rank_device(std::string_view text, std::string_view what, const World& world);

// On rank 0, EnvironmentError naming two ranks that drive the same GPU (by UUID) where the device `text`
// (read from `what`) let each rank pick its own ("auto", "cuda"); nothing on the simulated device, which has
// no UUID, nor in a world of one. Collective.
void check_one_rank_per_gpu(World& world, std::string_view text, std::string_view what,
                            const DeviceInfo& device);

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
