#pragma once

#include <memory>

#include "harness/alloc/allocator.hpp"

namespace memstress {

// The `torch` peer: PyTorch's own C++ CUDA caching allocator (c10::cuda::CUDACachingAllocator,
// raw_alloc_with_stream / raw_delete), so memstress's allocators are measured side by side with the
// real thing. Built only with -DMEMSTRESS_WITH_TORCH=ON (the gpu-torch preset) where PyTorch is
// installed. PyTorch's settings come from PYTORCH_CUDA_ALLOC_CONF as usual; record_stream needs
// PyTorch's DataPtr and is not available through raw pointers (it is a no-op here). Needs a real GPU.
std::unique_ptr<Allocator> make_torch_allocator(DeviceBackend& backend);

}  // namespace memstress
