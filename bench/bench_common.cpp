// Devices, peers and statistics shared by the allocator micro-benchmarks (bench_common.hpp).

#include "bench/bench_common.hpp"

#include <fmt/format.h>

#include <exception>
#include <filesystem>
#include <map>
#include <system_error>

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

namespace {

// The example caching plugin beside this binary: the build tree's examples/allocator-plugin/ or an install's
// plugin directory (MEMSTRESS_PLUGIN_RELDIR from the binary's directory); the build tree's name when neither
// holds it, so that its rows say which file is missing.
std::string example_plugin() {
  constexpr std::string_view kFile = "libmemstress_caching_plugin.so";
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  const std::filesystem::path dir = error ? std::filesystem::path(".") : exe.parent_path();
  const std::filesystem::path build_tree = dir / ".." / "examples" / "allocator-plugin" / kFile;
  for (const std::filesystem::path& candidate : {build_tree, dir / MEMSTRESS_PLUGIN_RELDIR / kFile}) {
    if (std::filesystem::exists(candidate, error)) {
      return candidate.lexically_normal().string();
    }
  }
  return build_tree.lexically_normal().string();
}

}  // namespace

std::string plugin_label(std::string_view spec) {
  std::string path(spec.substr(spec.starts_with("plugin:") ? 7 : 0));
  // plugin:PATH[:ALLOC:FREE]: the path is what stands before the function names, if any
  if (const auto so = path.rfind(".so"); so != std::string::npos) {
    path.resize(so + 3);
  }
  std::string name = std::filesystem::path(path).stem().string();
  for (const std::string_view prefix : {"lib", "memstress_"}) {
    if (name.starts_with(prefix)) {
      name.erase(0, prefix.size());
    }
  }
  if (name.ends_with("_plugin")) {
    name.resize(name.size() - std::string_view("_plugin").size());
  }
  return "plugin-" + name;
}

Peers::Peers(const std::vector<std::string>& plugins) {
  // Every peer memstress has (Note [The peers in one place], harness/alloc/factory.cpp) on the GPU, those
  // that run on it on the simulated device too.
  for (const PeerInfo& info : allocator_peers()) {
    const Peer peer = keep(std::string(info.name), std::string(info.name));
    cuda_.push_back(peer);
    if (info.simulated) {
      sim_.push_back(peer);
    }
  }
  std::vector<std::string> specs{"plugin:" + example_plugin()};
  for (const std::string& plugin : plugins) {
    specs.push_back("plugin:" + plugin);
  }
  std::map<std::string, std::string, std::less<>> labels;  // label -> the spec it came from
  for (std::string& spec : specs) {
    std::string label = plugin_label(spec);
    if (const auto [it, added] = labels.emplace(label, spec); !added) {
      throw InputError(
          fmt::format("--plugin: {} and {} would both be benchmarked as {}; give them different "
                      "file names",
                      it->second, spec, label));
    }
    const Peer peer = keep(std::move(label), std::move(spec));
    cuda_.push_back(peer);
    sim_.push_back(peer);
  }
}

Peer Peers::keep(std::string label, std::string spec) {
  const std::string_view l = text_.emplace_back(std::move(label));
  const std::string_view s = text_.emplace_back(std::move(spec));
  return Peer{l, s};
}

std::unique_ptr<Allocator> make_peer(benchmark::State& state, const Peer& peer, DeviceBackend& backend) {
  try {
    return make_allocator(peer.spec, backend);
  } catch (const std::exception& e) {  // not built here, or it needs something this device lacks
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

std::optional<Subject> make_subject(benchmark::State& state, const Peer& peer, Device device) {
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
