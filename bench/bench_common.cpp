// Devices, peers and statistics shared by the allocator micro-benchmarks (bench_common.hpp).

#include "bench/bench_common.hpp"

#include <fmt/format.h>

#include <exception>

#include "harness/alloc/factory.hpp"
#include "harness/core/error.hpp"
#include "harness/memory/cuda_backend.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "harness/memory/sim_backend.hpp"

namespace memstress::bench {

std::string_view device_name(Device device) noexcept {
  return device == Device::cuda ? "cuda" : "sim";
}

std::unique_ptr<DeviceBackend> make_device(benchmark::State& state, Device device) {
  if (device == Device::sim) {
    return std::make_unique<SimBackend>(kSimCapacity);
  }
  if (cuda::device_count() == 0) {
    state.SkipWithError("needs a CUDA device");
    return nullptr;
  }
  try {
    return std::make_unique<CudaBackend>(0);
  } catch (const std::exception& e) {
    state.SkipWithError(fmt::format("CUDA device 0: {}", e.what()).c_str());
    return nullptr;
  }
}

std::unique_ptr<Allocator> make_peer(benchmark::State& state, std::string_view peer, DeviceBackend& backend) {
  try {
    return make_allocator(
        peer == kPluginPeer ? std::string("plugin:") + MEMSTRESS_CACHING_PLUGIN : std::string(peer), backend);
  } catch (const InputError& e) {
    state.SkipWithError(peer == "torch" ? "torch peer not built" : e.what());
  } catch (const std::exception& e) {  // EnvironmentError: the peer needs something this device lacks
    state.SkipWithError(e.what());
  }
  return nullptr;
}

std::optional<std::int64_t> stat(const MemoryStats& stats, std::string_view key) {
  const auto it = stats.find(key);
  if (it == stats.end()) {
    return std::nullopt;
  }
  return it->second;
}

std::string benchmark_name(std::string_view family, std::string_view peer, Device device) {
  return fmt::format("BM_{}/{}/{}", family, peer, device_name(device));
}

std::optional<Subject> make_subject(benchmark::State& state, std::string_view peer, Device device) {
  Subject subject;
  subject.backend = make_device(state, device);
  if (!subject.backend) {
    return std::nullopt;
  }
  subject.allocator = make_peer(state, peer, *subject.backend);
  if (!subject.allocator) {
    return std::nullopt;
  }
  state.SetLabel(subject.backend->info().name.c_str());
  return subject;
}

}  // namespace memstress::bench
