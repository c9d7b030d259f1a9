#include "harness/dist/rank_setup.hpp"

#include <fmt/format.h>

#include <map>
#include <utility>

#include "harness/core/error.hpp"
#include "harness/core/json_input.hpp"
#include "harness/core/json_text.hpp"
#include "harness/core/log.hpp"
#include "harness/dist/dist_error.hpp"
#include "harness/dist/nccl_comm.hpp"
#include "harness/dist/world.hpp"
#include "harness/memory/backend.hpp"
#include "harness/memory/cuda_handles.hpp"

namespace memstress {

namespace {

bool picks_its_own(std::string_view flag) {
  return flag == "auto" || flag == "cuda";
}

}  // namespace

DeviceSpec rank_device(std::string_view text, std::string_view what, const World& world, int visible_gpus) {
  DeviceSpec spec = DeviceSpec::parse(text, what);
  if (world.size() == 1 || !picks_its_own(text)) {
    return spec;
  }
  if (visible_gpus == 1) {
    spec.ordinal = 0;  // the one GPU this rank was given (Note [A GPU for each rank])
    return spec;
  }
  if (visible_gpus > 1 && world.host_rank() >= visible_gpus) {
    throw EnvironmentError(fmt::format(
        "{} {}: rank {} is rank {} on this host, which has {} GPUs: start at most one rank per GPU, or name "
        "one with {} cuda:N",
        what, text, world.rank(), world.host_rank(), visible_gpus, what));
  }
  spec.ordinal = world.host_rank();
  return spec;
}

DeviceSpec rank_device(std::string_view text, std::string_view what, const World& world) {
  if (world.size() == 1 || !picks_its_own(text)) {
    return DeviceSpec::parse(text, what);  // no GPU counted where none is picked: `sim` never touches CUDA
  }
  return rank_device(text, what, world, cuda::device_count());
}

void check_one_rank_per_gpu(World& world, std::string_view text, std::string_view what,
                            const DeviceInfo& device) {
  if (world.size() == 1 || !picks_its_own(text)) {
    return;
  }
  const nlohmann::json mine = {{"uuid", device.kind == BackendKind::cuda ? device.uuid : std::string()},
                               {"label", device.label()},
                               {"node", world.node()}};
  const std::vector<std::string> texts = world.gather(json_text(mine));
  std::map<std::string, std::pair<std::size_t, nlohmann::json>> first_of;  // UUID: its first rank
  for (std::size_t r = 0; r < texts.size(); ++r) {
    nlohmann::json rank;
    try {
      rank = parse_json_input(texts[r]);
    } catch (const std::exception& e) {
      throw DistError(fmt::format("the GPU of rank {} does not read back: {}", r, e.what()));
    }
    const std::string uuid = rank.value("uuid", std::string());
    if (uuid.empty()) {
      continue;
    }
    const auto [it, first] = first_of.try_emplace(uuid, r, rank);
    if (!first) {
      throw EnvironmentError(fmt::format(
          "{} {}: ranks {} and {} both drive GPU {} ({} on node {}): start at most one rank per GPU (a rank "
          "that sees one GPU drives it: give each rank its own, e.g. "
          "srun --gpus-per-task=1), "  // another program's command line
          "or name one with {} cuda:N",
          what, text, it->second.first, r, uuid, rank.value("label", std::string()),
          rank.value("node", std::string()), what));
    }
  }
}

std::filesystem::path rank_path(const std::filesystem::path& path, const World& world) {
  if (world.rank() == 0) {
    return path;
  }
  std::filesystem::path p = path;
  return p.replace_extension(fmt::format(".rank{}{}", world.rank(), path.extension().string()));
}

nlohmann::json gather_environment(World& world, nlohmann::json local, const DeviceBackend& backend) {
  const DeviceInfo& info = backend.info();
  std::string bus_id;
  if (info.kind == BackendKind::cuda && local.contains("gpus")) {
    for (const nlohmann::json& gpu : local["gpus"]) {
      if (gpu.value("ordinal", -1) == info.ordinal && gpu.contains("pci_bus_id") &&
          gpu["pci_bus_id"].is_string()) {
        bus_id = gpu["pci_bus_id"].get<std::string>();
      }
    }
  }
  local["rank"] = world.rank();
  local["local_rank"] = world.local_rank();
  local["node"] = world.node();
  local["device"] = {{"label", info.label()}, {"uuid", info.uuid}, {"pci_bus_id", bus_id}};
  const std::vector<std::string> texts = world.gather(json_text(local));
  if (world.rank() != 0) {
    return nullptr;
  }
  nlohmann::json ranks = nlohmann::json::array();
  for (std::size_t r = 0; r < texts.size(); ++r) {
    try {
      ranks.push_back(parse_json_input(texts[r]));
    } catch (const std::exception& e) {
      throw DistError(fmt::format("the environment of rank {} does not read back: {}", r, e.what()));
    }
  }
  return {{"ranks", ranks}};
}

std::unique_ptr<NcclComm> make_nccl(World& world, const DeviceBackend& backend) {
  if (backend.info().kind != BackendKind::cuda) {
    return nullptr;
  }
  try {
    const cuda::ScopedDevice current(backend.info().ordinal);
    return std::make_unique<NcclComm>(world, backend.info().ordinal);
  } catch (const Error& e) {
    if (world.size() > 1) {
      throw;
    }
    note("no NCCL communicator (workloads that need one are skipped): {}", e.what());
    return nullptr;
  }
}

}  // namespace memstress
