#pragma once

// The GPU's half of make_backend (device_spec.cpp): cuda_backend.cpp in the GPU build, cuda_unavailable.cpp
// in the build without CUDA (Note [The build without CUDA], cmake/HostOnly.cmake), which counts no GPU and
// says why.

#include <memory>
#include <string_view>

#include "harness/memory/backend.hpp"

namespace memstress {

// The CUDA devices this process sees: 0 without a driver or a GPU, and always 0 without CUDA in the build.
[[nodiscard]] int gpu_count();
// Why there is no GPU when gpu_count() is 0: "no NVIDIA driver or no GPU", or that the build has no CUDA.
[[nodiscard]] std::string_view no_gpu_reason() noexcept;
// A backend of GPU `ordinal`, made the calling thread's current device (workloads make streams and launch
// kernels on the current device). Throws ApiError.
[[nodiscard]] std::unique_ptr<DeviceBackend> make_gpu_backend(int ordinal);

}  // namespace memstress
