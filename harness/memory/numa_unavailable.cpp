// Note [Host memory near the GPU], in a build that did not find hwloc: nothing is placed or read back,
// and the record says why.
#include "harness/memory/numa.hpp"

namespace memstress {

NumaPlacement place_near_gpu(int /*ordinal*/, NumaMode mode) {
  NumaPlacement placement;
  placement.mode = mode;
  placement.note = "this memstress was built without hwloc (libhwloc-dev): host memory is not placed";
  return placement;
}

struct HostTopology::Loaded {};

HostTopology::HostTopology() = default;

HostTopology::~HostTopology() = default;

std::optional<int> HostTopology::node_of(const void* /*data*/, std::size_t /*bytes*/) const {
  return std::nullopt;
}

std::vector<int> HostTopology::gpu_nodes(int /*ordinal*/) const {
  return {};
}

}  // namespace memstress
