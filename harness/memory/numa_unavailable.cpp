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

std::optional<int> numa_node_of(const void* /*data*/, std::size_t /*bytes*/) {
  return std::nullopt;
}

std::vector<int> gpu_numa_nodes(int /*ordinal*/) {
  return {};
}

}  // namespace memstress
