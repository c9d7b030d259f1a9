#include "suites/support/peer_access.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "harness/core/cuda_check.hpp"
#include "harness/core/planted_faults.hpp"
#include "harness/memory/cuda_handles.hpp"

namespace memstress::suites {

PeerAccess::PeerAccess(const std::vector<int>& devices) {
  const PlantedFaults planted =
      planted_faults();  // nopeer:FROM:TO in a fault-hook build, Note [Planted faults]
  for (const int from : devices) {
    const cuda::ScopedDevice on(from);
    for (const int to : devices) {
      if (to == from) {
        continue;
      }
      int can = 0;
      MEMSTRESS_CUDA_TRY(cudaDeviceCanAccessPeer(&can, from, to));
      if (can == 0 || planted.refuses(from, to)) {
        refused_.emplace_back(from, to);
        continue;
      }
      const cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled) {
        (void)cudaGetLastError();  // clears the (non-sticky) error: someone else's mapping, left alone
      } else {
        MEMSTRESS_CUDA_TRY(e);
        enabled_.emplace_back(from, to);
      }
      reachable_.emplace_back(from, to);
    }
  }
}

PeerAccess::~PeerAccess() {
  for (const auto& [from, to] : enabled_) {
    const cuda::ScopedDevice on(from);
    MEMSTRESS_CUDA_WARN(cudaDeviceDisablePeerAccess(to));
  }
}

bool PeerAccess::can_access(int from, int to) const noexcept {
  return std::find(reachable_.begin(), reachable_.end(), std::make_pair(from, to)) != reachable_.end();
}

}  // namespace memstress::suites
