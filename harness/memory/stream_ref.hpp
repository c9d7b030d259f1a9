#pragma once

#include <cstdint>

// cudaStream_t is a CUstream_st*: named here without CUDA's headers, so that the build without CUDA
// (Note [The build without CUDA], cmake/HostOnly.cmake) compiles every file that passes streams around.
struct CUstream_st;

namespace memstress {

// A stream as allocators see it: an identity that blocks belong to. On a real GPU it is a cudaStream_t;
// on the simulated device any distinct value is a distinct stream. Default: the legacy default stream.
struct StreamRef {
  std::uintptr_t id = 0;

  static StreamRef from(CUstream_st* stream) noexcept {
    return StreamRef{
        reinterpret_cast<std::uintptr_t>(stream)};  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
  }
  [[nodiscard]] CUstream_st* cuda() const noexcept {
    return reinterpret_cast<CUstream_st*>(id);  // NOLINT(performance-no-int-to-ptr)
  }
  friend bool operator==(StreamRef, StreamRef) = default;
};

}  // namespace memstress
