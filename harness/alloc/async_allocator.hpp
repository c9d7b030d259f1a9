#pragma once

#include <cstdint>
#include <memory>

#include "harness/alloc/allocator.hpp"
#include "harness/alloc/allocator_flags.hpp"

namespace memstress {

// The `async` peer: cudaMallocAsync / cudaFreeAsync on a memory pool of its own (not the device's
// default pool), with a configurable release threshold (bytes the pool keeps cached across
// synchronizations; default: everything). Needs a real GPU: throws EnvironmentError on the simulated one,
// naming `flags`' allocator and device flags in its advice.
std::unique_ptr<Allocator> make_async_allocator(DeviceBackend& backend, std::uint64_t release_threshold,
                                                const AllocatorFlags& flags);

// Whether this build has the peer: not without CUDA (Note [The build without CUDA], cmake/HostOnly.cmake,
// cuda_peers_unavailable.cpp), where require_async_built() throws EnvironmentError (exit 3) saying so.
bool async_built() noexcept;
void require_async_built(const AllocatorFlags& flags);

}  // namespace memstress
