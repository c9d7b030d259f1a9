// Note [Host memory near the GPU], in a build that did not find hwloc: nothing is placed or read back,
// and the record says why.
#include "harness/memory/numa.hpp"

namespace memstress {

struct MemoryPolicyRestore::Saved {};

void MemoryPolicyRestore::PutBack::operator()(Saved* saved) const noexcept {
  delete saved;  // NOLINT(cppcoreguidelines-owning-memory): the unique_ptr's deleter
}

NearGpu place_near_gpu(int /*ordinal*/, NumaMode mode) {
  NearGpu near;
  near.placement.mode = mode;
  near.placement.note = "this memstress was built without hwloc (libhwloc-dev): host memory is not placed";
  return near;
}

std::string thread_memory_policy() {
  return "unknown";
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
