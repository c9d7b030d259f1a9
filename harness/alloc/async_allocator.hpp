#pragma once

#include <cstdint>
#include <memory>

#include "harness/alloc/allocator.hpp"

namespace memstress {

// The `async` peer: cudaMallocAsync / cudaFreeAsync on a memory pool of its own (not the device's
// default pool), with a configurable release threshold (bytes the pool keeps cached across
// synchronizations; default: everything). Needs a real GPU: throws EnvironmentError on the simulated one.
std::unique_ptr<Allocator> make_async_allocator(DeviceBackend& backend, std::uint64_t release_threshold);

}  // namespace memstress
