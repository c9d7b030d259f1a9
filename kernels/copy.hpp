#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace memstress::kernels {

// Enqueues a copy of `bytes` from src to dst done by SM loads and stores rather than a copy engine.
// Either side may be device memory or mapped pinned host memory (a kernel over PCIe); both must be
// 16-byte aligned (InputError otherwise). `sharing`: how many such copies run at once on the device (the
// two directions of a bidirectional copy, several streams): each gets that share of the grid, so that
// they run side by side rather than one after the other for want of room on the SMs.
void sm_copy(void* dst, const void* src, std::size_t bytes, cudaStream_t stream, unsigned sharing = 1);

// Two copies of `bytes` (src_a to dst_a, src_b to dst_b) by one kernel, half its warps on each, as
// nvbandwidth's SM bidirectional testcases copy both ways. All four pointers must be 16-byte aligned
// (InputError otherwise); `sharing` as for sm_copy.
void sm_copy_both(void* dst_a, const void* src_a, void* dst_b, const void* src_b, std::size_t bytes,
                  cudaStream_t stream, unsigned sharing = 1);

}  // namespace memstress::kernels
