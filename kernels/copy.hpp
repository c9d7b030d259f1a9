#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace memstress::kernels {

// Enqueues a copy of `bytes` from src to dst done by SM loads and stores rather than a copy engine.
// Either side may be device memory or mapped pinned host memory (a kernel over PCIe); both must be
// 16-byte aligned (InputError otherwise).
void sm_copy(void* dst, const void* src, std::size_t bytes, cudaStream_t stream);

}  // namespace memstress::kernels
