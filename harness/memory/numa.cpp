// Note [Host memory near the GPU], with hwloc.
#include "harness/memory/numa.hpp"

#include <fmt/format.h>
#include <hwloc.h>
#include <hwloc/cudart.h>

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <system_error>

namespace memstress {
namespace {

struct TopologyFree {
  void operator()(hwloc_topology* topology) const noexcept { hwloc_topology_destroy(topology); }
};
using Topology = std::unique_ptr<hwloc_topology, TopologyFree>;

struct BitmapFree {
  void operator()(hwloc_bitmap_s* bitmap) const noexcept { hwloc_bitmap_free(bitmap); }
};
using Bitmap = std::unique_ptr<hwloc_bitmap_s, BitmapFree>;

// This host's topology (CPUs and NUMA nodes; no I/O devices: the GPU's place comes from sysfs), or null.
Topology load_topology() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    return {};
  }
  Topology topology(raw);
  if (hwloc_topology_load(raw) != 0) {
    return {};
  }
  return topology;
}

Bitmap new_bitmap() {
  return Bitmap(hwloc_bitmap_alloc());
}

std::vector<int> members(hwloc_const_bitmap_t set) {
  std::vector<int> out;
  for (int i = hwloc_bitmap_first(set); i != -1; i = hwloc_bitmap_next(set, i)) {
    out.push_back(i);
  }
  return out;
}

std::string list_text(hwloc_const_bitmap_t set) {
  char* text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, set) < 0 || text == nullptr) {
    return {};
  }
  std::string out(text);
  std::free(text);  // NOLINT(cppcoreguidelines-no-malloc): hwloc allocates it with malloc
  return out;
}

// The nodes of the CPUs local to the GPU's PCI device, or null where that is not known: where sysfs gives
// no local CPUs (a virtual machine may not), hwloc answers with the whole machine's, which on a host of
// several nodes with CPUs says nothing of where the GPU is.
Bitmap gpu_nodeset(hwloc_topology_t topology, int ordinal) {
  const Bitmap cpus = new_bitmap();
  const Bitmap nodes = new_bitmap();
  const Bitmap all = new_bitmap();
  if (!cpus || !nodes || !all || hwloc_cudart_get_device_cpuset(topology, ordinal, cpus.get()) != 0) {
    return {};
  }
  hwloc_cpuset_to_nodeset(topology, cpus.get(), nodes.get());
  hwloc_cpuset_to_nodeset(topology, hwloc_topology_get_complete_cpuset(topology), all.get());
  const bool everywhere =
      hwloc_bitmap_isequal(cpus.get(), hwloc_topology_get_complete_cpuset(topology)) != 0 &&
      hwloc_bitmap_weight(all.get()) > 1;
  return hwloc_bitmap_iszero(nodes.get()) != 0 || everywhere ? Bitmap()
                                                             : Bitmap(hwloc_bitmap_dup(nodes.get()));
}

void record_cpus(hwloc_topology_t topology, NumaPlacement& placement) {
  const Bitmap cpus = new_bitmap();
  const Bitmap nodes = new_bitmap();
  if (!cpus || !nodes || hwloc_get_cpubind(topology, cpus.get(), HWLOC_CPUBIND_PROCESS) != 0) {
    return;
  }
  placement.cpus = list_text(cpus.get());
  hwloc_cpuset_to_nodeset(topology, cpus.get(), nodes.get());
  placement.cpu_nodes = members(nodes.get());
}

constexpr int kThreadNodes = HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET;

}  // namespace

struct MemoryPolicyRestore::Saved {
  Topology topology;
  Bitmap nodes;
  hwloc_membind_policy_t policy = HWLOC_MEMBIND_DEFAULT;
};

void MemoryPolicyRestore::PutBack::operator()(Saved* saved) const noexcept {
  // Best effort, as the placement was: a policy that cannot be put back leaves the thread's memory preferring
  // the GPU's nodes, which is where the run wanted it.
  hwloc_set_membind(saved->topology.get(), saved->nodes.get(), saved->policy, kThreadNodes);
  delete saved;  // NOLINT(cppcoreguidelines-owning-memory): the unique_ptr's deleter
}

std::string thread_memory_policy() {
  const Topology topology = load_topology();
  const Bitmap nodes = new_bitmap();
  hwloc_membind_policy_t policy = HWLOC_MEMBIND_DEFAULT;
  if (!topology || !nodes || hwloc_get_membind(topology.get(), nodes.get(), &policy, kThreadNodes) != 0) {
    return "unknown";
  }
  switch (policy) {
    case HWLOC_MEMBIND_BIND:
      return "bind " + list_text(nodes.get());
    case HWLOC_MEMBIND_INTERLEAVE:
      return "interleave " + list_text(nodes.get());
    default:
      return "default";
  }
}

NearGpu place_near_gpu(int ordinal, NumaMode mode) {
  NearGpu near;
  NumaPlacement& placement = near.placement;
  placement.mode = mode;
  Topology topology = load_topology();
  if (!topology) {
    placement.note = "hwloc could not read this host's topology: host memory is not placed";
    return near;
  }
  placement.host_nodes = hwloc_get_nbobjs_by_type(topology.get(), HWLOC_OBJ_NUMANODE);
  record_cpus(topology.get(), placement);
  const Bitmap nodes = gpu_nodeset(topology.get(), ordinal);
  if (!nodes) {
    placement.note = fmt::format(
        "the NUMA node of CUDA device {} is not known (sysfs gives its PCI device no local CPUs): not placed",
        ordinal);
    return near;
  }
  placement.gpu_nodes = members(nodes.get());
  if (mode == NumaMode::off) {
    return near;
  }
  auto saved = std::make_unique<MemoryPolicyRestore::Saved>();
  saved->nodes = new_bitmap();
  const bool known = saved->nodes &&
                     hwloc_get_membind(topology.get(), saved->nodes.get(), &saved->policy, kThreadNodes) == 0;
  // Not HWLOC_MEMBIND_STRICT: Linux's MPOL_PREFERRED, so a full node falls back to another rather than fail.
  if (hwloc_set_membind(topology.get(), nodes.get(), HWLOC_MEMBIND_BIND, kThreadNodes) != 0) {
    placement.note = fmt::format("setting the memory policy failed: {}",
                                 std::error_code(errno, std::generic_category()).message());
    return near;
  }
  placement.memory_placed = true;
  if (known) {
    saved->topology = std::move(topology);
    near.restore = MemoryPolicyRestore(
        std::unique_ptr<MemoryPolicyRestore::Saved, MemoryPolicyRestore::PutBack>(saved.release()));
  }
  return near;
}

struct HostTopology::Loaded {
  Topology topology;
};

HostTopology::HostTopology() {
  if (Topology topology = load_topology()) {
    loaded_ = std::make_unique<Loaded>(Loaded{std::move(topology)});
  }
}

HostTopology::~HostTopology() = default;

std::optional<int> HostTopology::node_of(const void* data, std::size_t bytes) const {
  const Bitmap nodes = new_bitmap();
  if (!loaded_ || !nodes || data == nullptr || bytes == 0 ||
      hwloc_get_area_memlocation(loaded_->topology.get(), data, bytes, nodes.get(),
                                 HWLOC_MEMBIND_BYNODESET) != 0 ||
      hwloc_bitmap_weight(nodes.get()) != 1) {
    return std::nullopt;
  }
  return hwloc_bitmap_first(nodes.get());
}

std::vector<int> HostTopology::gpu_nodes(int ordinal) const {
  if (!loaded_) {
    return {};
  }
  const Bitmap nodes = gpu_nodeset(loaded_->topology.get(), ordinal);
  return nodes ? members(nodes.get()) : std::vector<int>{};
}

}  // namespace memstress
