#pragma once

// Host memory near the GPU: the NUMA node(s) a GPU hangs off, a rank's memory placed there, and where a
// host buffer's pages really are.
//
// Note [Host memory near the GPU]
// On a host of several NUMA nodes (two sockets, or a socket split into nodes), a copy between a GPU and
// host memory on the far node crosses the sockets' link: H2D and D2H run slower and vary with where the
// OS happened to put the pages. memstress places each rank's host memory on the node(s) its GPU is
// attached to (`--numa local`, the default), as `numactl --preferred` beside the GPU would: the GPU's nodes
// come from hwloc (the CPUs local to its PCI device, from sysfs, turned into their NUMA nodes), and the
// rank's memory policy prefers them (hwloc's non-strict bind, Linux MPOL_PREFERRED: memory still comes
// from another node when the GPU's is full, rather than the allocation failing). The policy is the
// thread's and is inherited by threads made after it, so the session sets it before it starts any thread
// of its own. CPUs are not rebound: mpirun's binding is the user's choice, and the rank's CPUs are
// recorded instead. `--numa off` leaves the OS's default (first touch). What was done, and why not where
// it could not be, goes into each rank's environment in the results; the transfers workload reads back
// where its host buffers' pages are (HostTopology::node_of, the kernel's move_pages) and records whether
// every one is on the GPU's nodes (`numa_local`), which the acceptance profiles require.

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memstress {

enum class NumaMode { local, off };

// `local` or `off`; anything else is an InputError naming `flag`.
[[nodiscard]] NumaMode parse_numa_mode(std::string_view text, std::string_view flag);

struct NumaPlacement {
  NumaMode mode = NumaMode::local;
  int host_nodes = 0;          // NUMA nodes with memory on the host; 0 where unknown
  std::vector<int> gpu_nodes;  // the nodes the GPU is attached to (empty where unknown)
  bool memory_placed = false;  // this rank's memory policy prefers gpu_nodes
  std::string cpus;            // the CPUs the rank may run on ("0-47,96-143"), as bound by its launcher
  std::vector<int> cpu_nodes;  // the nodes of those CPUs
  std::string note;            // why nothing was placed, where it was not
};

// The calling thread's memory policy as it was before place_near_gpu set it, put back when this is destroyed
// or assigned over, on the thread that destroys it (a policy is a thread's: destroy it on the thread that
// placed). Empty, it puts back nothing.
class MemoryPolicyRestore {
 public:
  struct Saved;
  struct PutBack {
    void operator()(Saved* saved) const noexcept;
  };
  MemoryPolicyRestore() = default;
  explicit MemoryPolicyRestore(std::unique_ptr<Saved, PutBack> saved) : saved_(std::move(saved)) {}

 private:
  std::unique_ptr<Saved, PutBack> saved_;
};

struct NearGpu {
  NumaPlacement placement;
  MemoryPolicyRestore restore;  // keep it for as long as the placement should hold
};

// The GPU of CUDA ordinal `ordinal`'s nodes, and with NumaMode::local the calling thread's memory policy
// set to prefer them (inherited by the threads it makes later) until `restore` is destroyed. Never throws:
// what could not be done is said in `note`. Without hwloc (a build that did not find it) nothing is placed
// and the note says so.
[[nodiscard]] NearGpu place_near_gpu(int ordinal, NumaMode mode);

// The calling thread's memory policy, as text ("default", "bind 0-1", "interleave 0-3"; "unknown" where it
// cannot be read or hwloc is missing).
[[nodiscard]] std::string thread_memory_policy();

// hwloc's view of this host (its CPUs and NUMA nodes), loaded once for the questions below: loading it takes
// tens of milliseconds, so a caller with several questions keeps one. Never throws; one that could not be
// loaded, or any in a build without hwloc, answers "unknown" to everything.
class HostTopology {
 public:
  HostTopology();
  ~HostTopology();
  HostTopology(const HostTopology&) = delete;
  HostTopology& operator=(const HostTopology&) = delete;
  HostTopology(HostTopology&&) = delete;
  HostTopology& operator=(HostTopology&&) = delete;

  // The GPU of CUDA ordinal `ordinal`'s NUMA nodes, without placing anything; empty where unknown (sysfs
  // gives its PCI device no local CPUs on a host of several nodes).
  [[nodiscard]] std::vector<int> gpu_nodes(int ordinal) const;
  // The one NUMA node holding every page of [data, data + bytes), or nothing where the pages lie on several
  // nodes or their node cannot be read (memory the kernel will not report).
  [[nodiscard]] std::optional<int> node_of(const void* data, std::size_t bytes) const;

 private:
  struct Loaded;
  std::unique_ptr<Loaded> loaded_;  // null: not loaded
};

[[nodiscard]] nlohmann::json to_json(const NumaPlacement& placement);

}  // namespace memstress
