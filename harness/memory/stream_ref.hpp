#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace memstress {

// A stream as allocators see it: an identity that blocks belong to. On a real GPU it is a cudaStream_t;
// on the simulated device any distinct value is a distinct stream. Default: the legacy default stream.
struct StreamRef {
  std::uintptr_t id = 0;

  static StreamRef from(cudaStream_t stream) noexcept {
    return StreamRef{
        reinterpret_cast<std::uintptr_t>(stream)};  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
  }
  [[nodiscard]] cudaStream_t cuda() const noexcept {
    return reinterpret_cast<cudaStream_t>(id);  // NOLINT(performance-no-int-to-ptr)
  }
  friend bool operator==(StreamRef, StreamRef) = default;
};

}  // namespace memstress
