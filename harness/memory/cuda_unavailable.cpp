// The GPU's half of make_backend in the build without CUDA (Note [The build without CUDA],
// cmake/HostOnly.cmake): no GPU is ever counted, so `--device auto` is the simulated device and
// `--device cuda` is refused (exit 3), saying why.

#include "harness/core/error.hpp"
#include "harness/memory/gpu_backend.hpp"

namespace memstress {

int gpu_count() {
  return 0;
}

std::string_view no_gpu_reason() noexcept {
  return "this memstress was built without CUDA (the pip wheel holds the host tools: doctor, predict-batch, "
         "replay, compare, report, db); build memstress from a checkout for GPUs (docs/install.md)";
}

std::unique_ptr<DeviceBackend> make_gpu_backend(int /*ordinal*/) {
  throw EnvironmentError(std::string(no_gpu_reason()));
}

}  // namespace memstress
