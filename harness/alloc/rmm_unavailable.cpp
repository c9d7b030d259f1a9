// make_rmm_allocator where this build has no RMM (MEMSTRESS_WITH_RMM=OFF, or AUTO without librmm).

#include <fmt/format.h>

#include "harness/alloc/rmm_allocator.hpp"
#include "harness/core/error.hpp"

namespace memstress {

bool rmm_built() noexcept {
  return false;
}

void require_rmm_built(RmmResource resource, std::string_view what) {
  throw EnvironmentError(fmt::format(
      "{} {}: this build has no RMM peers; scripts/setup builds them where librmm-cu13 is installed "
      "in .venv (requirements.txt), or configure with -DMEMSTRESS_WITH_RMM=ON -DRMM_ROOT=<librmm package "
      "dir>",
      what, rmm_peer_name(resource)));
}

std::unique_ptr<Allocator> make_rmm_allocator(RmmResource resource, DeviceBackend& /*backend*/,
                                              const AllocConfig& /*config*/, const AllocatorFlags& flags) {
  require_rmm_built(resource, flags.name);
  return nullptr;  // not reached
}

}  // namespace memstress
