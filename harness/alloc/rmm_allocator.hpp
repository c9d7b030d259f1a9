#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "harness/alloc/allocator.hpp"
#include "harness/alloc/allocator_flags.hpp"

namespace memstress {

struct AllocConfig;

// The RAPIDS RMM peers, RMM's own memory resources through the allocator seam (rmm_allocator.cpp has the
// design note): rmm-pool (pool_memory_resource over cuda_memory_resource), rmm-arena
// (arena_memory_resource over cuda_memory_resource) and rmm-async (cuda_async_memory_resource). Built only
// with RMM (MEMSTRESS_WITH_RMM, cmake/FindRMM.cmake); each needs a real GPU.
enum class RmmResource { pool, arena, async };

// The --allocator name of each resource, and the other way (nullopt: not an RMM peer's name).
[[nodiscard]] constexpr std::string_view rmm_peer_name(RmmResource resource) noexcept {
  switch (resource) {
    case RmmResource::pool:
      return "rmm-pool";
    case RmmResource::arena:
      return "rmm-arena";
    case RmmResource::async:
      return "rmm-async";
  }
  return "rmm";
}
[[nodiscard]] constexpr std::optional<RmmResource> rmm_resource(std::string_view name) noexcept {
  for (const RmmResource r : {RmmResource::pool, RmmResource::arena, RmmResource::async}) {
    if (rmm_peer_name(r) == name) {
      return r;
    }
  }
  return std::nullopt;
}
// Whether this build has the RMM peers, and EnvironmentError (exit 3, saying how to build them) where not.
[[nodiscard]] bool rmm_built() noexcept;
void require_rmm_built(RmmResource resource, std::string_view what);
// The peer (its statistics are reserved bytes and OOM counts; the factory wraps it in the statistics
// adaptor for allocated and requested bytes). Throws EnvironmentError on the simulated device or where
// this build has no RMM; its errors name the peer and its settings by `flags`.
std::unique_ptr<Allocator> make_rmm_allocator(RmmResource resource, DeviceBackend& backend,
                                              const AllocConfig& config, const AllocatorFlags& flags);

}  // namespace memstress
