#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace memstress {

// "GPU-8c2b7f1e-…" as nvidia-smi and CUDA_VISIBLE_DEVICES write it.
std::string format_gpu_uuid(const cudaUUID_t& uuid);

}  // namespace memstress
