#include "harness/alloc/factory.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <functional>
#include <map>

#include "harness/alloc/adaptors.hpp"
#include "harness/alloc/alloc_config.hpp"
#include "harness/alloc/async_allocator.hpp"
#include "harness/alloc/caching/caching_allocator.hpp"
#include "harness/alloc/direct_allocator.hpp"
#include "harness/alloc/plugin_allocator.hpp"
#include "harness/alloc/rmm_allocator.hpp"
#include "harness/core/error.hpp"
#if defined(MEMSTRESS_HAVE_TORCH)
#include "harness/alloc/torch_allocator.hpp"
#endif

namespace memstress {
namespace {

// One peer --allocator names: what it is (PeerInfo), whether this build has it (and the error saying how to
// get it where not), and how it is made from the parsed --alloc-conf.
struct Peer {
  std::string_view name;
  std::string_view origin;
  std::string_view what;
  bool simulated;
  bool baseline;
  bool (*built)() noexcept;
  void (*require_built)(
      const AllocatorFlags& flags);  // throws EnvironmentError: exit 3, saying how to build it
  std::unique_ptr<Allocator> (*make)(const AllocConfig& config, const AllocatorFlags& flags,
                                     DeviceBackend& backend);
};

bool always() noexcept {
  return true;
}
void nothing_to_require(const AllocatorFlags& /*flags*/) {}

constexpr bool torch_built() noexcept {
#if defined(MEMSTRESS_HAVE_TORCH)
  return true;
#else
  return false;
#endif
}

// A peer this build leaves out is missing from the environment, not a wrong name: exit 3, saying how to get
// it.
void require_torch_built(const AllocatorFlags& flags) {
  if (!torch_built()) {
    throw EnvironmentError(
        fmt::format("{} torch: this build has no torch peer; build the gpu-torch preset where PyTorch is "
                    "installed",
                    flags.name));
  }
}

std::unique_ptr<Allocator> make_torch([[maybe_unused]] const AllocConfig& config,
                                      [[maybe_unused]] const AllocatorFlags& flags,
                                      [[maybe_unused]] DeviceBackend& backend) {
#if defined(MEMSTRESS_HAVE_TORCH)
  return make_torch_allocator(backend);
#else
  require_torch_built(flags);
  return nullptr;  // not reached
#endif
}

template <RmmResource R>
constexpr Peer rmm_peer(std::string_view what) {
  return {rmm_peer_name(R),
          "RMM",
          what,
          false,
          false,
          rmm_built,
          [](const AllocatorFlags& flags) { require_rmm_built(R, flags.name); },
          [](const AllocConfig& config, const AllocatorFlags& flags, DeviceBackend& backend) {
            return make_peer_statistics(make_rmm_allocator(R, backend, config, flags));
          }};
}

// Note [The peers in one place]. Every peer, in the order `memstress list` shows them (a build without a peer
// lists the others: allocator_names()). Everything else that lists peers reads this table: `memstress list
// --format json` publishes it, docs/run.md's allocator table and the Python report's facts are generated from
// that (scripts/dev/registry.py), and the GPU conformance tests, the micro-benchmarks, the `--allocator` help
// of run, replay and doctor and scripts/lab/gpu-allocators take their peers from it.
constexpr std::array kPeers{
    Peer{"caching", "memstress",
         "PyTorch's CUDA caching allocator rebuilt: same rounding (512 B, `roundup_power2_divisions`), pools "
         "(≤ 1 MiB in 2 MiB segments; larger in 20 MiB or rounded segments), best fit per stream, splitting "
         "and merging, `max_split_size_mb`, `garbage_collection_threshold`, memory fraction, "
         "release-and-retry on failure, pending frees for `record_stream` — so PyTorch traces replay with "
         "PyTorch's behaviour. Each stream has its own pools and lock, so threads on their own streams do "
         "not contend",
         true, false, always, nothing_to_require,
         [](const AllocConfig& config, const AllocatorFlags& /*flags*/,
            DeviceBackend& backend) -> std::unique_ptr<Allocator> {
           return std::make_unique<caching::CachingAllocator>(backend, config);
         }},
    Peer{"expandable", "memstress",
         "the same with `expandable_segments:True`: one virtual range per stream and pool, grown and shrunk "
         "page by page (cuMemCreate/cuMemMap)",
         true, false, always, nothing_to_require,
         [](const AllocConfig& config, const AllocatorFlags& /*flags*/,
            DeviceBackend& backend) -> std::unique_ptr<Allocator> {
           AllocConfig expandable = config;
           expandable.expandable_segments = true;
           return std::make_unique<caching::CachingAllocator>(backend, std::move(expandable));
         }},
    Peer{"direct", "CUDA", "cudaMalloc / cudaFree per request: the baseline", true, true, always,
         nothing_to_require,
         [](const AllocConfig& /*config*/, const AllocatorFlags& /*flags*/, DeviceBackend& backend)
             -> std::unique_ptr<Allocator> { return std::make_unique<DirectAllocator>(backend); }},
    Peer{"async", "CUDA",
         "cudaMallocAsync on a pool of its own (`release_threshold_mb:N` sets its release threshold)", false,
         false, async_built, require_async_built,
         [](const AllocConfig& config, const AllocatorFlags& flags, DeviceBackend& backend) {
           return make_async_allocator(backend, config.release_threshold.value_or(AllocConfig::kUnlimited),
                                       flags);
         }},
    Peer{"torch", "PyTorch",
         "PyTorch's own allocator, side by side (built by the `gpu-torch` preset where PyTorch is installed)",
         false, false, torch_built, require_torch_built, make_torch},
    rmm_peer<RmmResource::pool>("RAPIDS RMM's `pool_memory_resource` over `cuda_memory_resource` (grows on "
                                "demand; `per_process_memory_fraction:F` caps it)"),
    rmm_peer<RmmResource::arena>(
        "RMM's `arena_memory_resource` (takes its whole arena up front: RMM's default is half the free "
        "memory; `per_process_memory_fraction:F` sizes it)"),
    rmm_peer<RmmResource::async>("RMM's `cuda_async_memory_resource` (`release_threshold_mb:N`)"),
};

const Peer* find_peer(std::string_view name) noexcept {
  for (const Peer& peer : kPeers) {
    if (peer.name == name) {
      return &peer;
    }
  }
  return nullptr;
}

[[noreturn]] void unknown(const AllocatorSpec& spec) {
  throw InputError(fmt::format("{} '{}': unknown allocator; choose one of: {}, or plugin:PATH.so",
                               spec.flags.name, spec.name, fmt::join(allocator_names(), ", ")));
}

std::unique_ptr<Allocator> make_peer(const AllocatorSpec& spec, DeviceBackend& backend) {
  if (const Peer* peer = find_peer(spec.name)) {
    peer->require_built(spec.flags);
    return peer->make(spec.conf, spec.flags, backend);
  }
  if (is_plugin_name(spec.name)) {
    return make_peer_statistics(
        make_plugin_allocator(parse_plugin_name(spec.name, spec.flags.name), backend));
  }
  unknown(spec);
}

}  // namespace

std::string resolved_alloc_conf(std::string flag, const EnvLookup& env) {
  if (!flag.empty()) {
    return flag;
  }
  const char* value = env("MEMSTRESS_ALLOC_CONF");
  return value == nullptr ? std::string() : std::string(value);
}

std::vector<PeerInfo> allocator_peers() {
  std::vector<PeerInfo> peers;
  peers.reserve(kPeers.size());
  for (const Peer& peer : kPeers) {
    peers.push_back({peer.name, peer.origin, peer.what, peer.simulated, peer.baseline, peer.built()});
  }
  return peers;
}

std::vector<std::string_view> allocator_names() {
  std::vector<std::string_view> names;
  for (const Peer& peer : kPeers) {
    if (peer.built()) {
      names.push_back(peer.name);
    }
  }
  return names;
}

void validate(const AllocatorSpec& spec) {
  if (const Peer* peer = find_peer(spec.name)) {
    peer->require_built(spec.flags);  // before any case runs
    return;
  }
  if (is_plugin_name(spec.name)) {
    check_plugin(parse_plugin_name(spec.name, spec.flags.name));
    return;
  }
  unknown(spec);
}

std::vector<AllocatorSpec> allocator_specs(std::string_view names, const AllocatorSpec& common) {
  std::vector<AllocatorSpec> specs;
  for (std::string_view rest = names; !rest.empty();) {
    const std::size_t comma = rest.find(',');
    AllocatorSpec a = common;
    a.name = std::string(rest.substr(0, comma));
    validate(a);
    specs.push_back(std::move(a));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  if (specs.empty()) {
    throw InputError(fmt::format("{}: name at least one allocator", common.flags.name));
  }
  // Rows and snapshots name a plugin by its file: two libraries of one file name could not be told apart.
  std::map<std::string, std::string, std::less<>> reported;  // reported name -> the spec given
  for (const AllocatorSpec& a : specs) {
    const std::string name =
        is_plugin_name(a.name) ? plugin_peer_name(parse_plugin_name(a.name, a.flags.name)) : a.name;
    if (const auto [it, added] = reported.emplace(name, a.name); !added && it->second != a.name) {
      throw InputError(
          fmt::format("{}: {} and {} would both be reported as {}; give them different file names",
                      a.flags.name, it->second, a.name, name));
    }
  }
  return specs;
}

std::filesystem::path path_for_allocator(const std::filesystem::path& path, std::string_view allocator,
                                         bool several) {
  if (!several) {
    return path;
  }
  constexpr std::string_view kPlugin = "plugin:";
  const std::string label =
      allocator.starts_with(kPlugin)
          ? "plugin-" + std::filesystem::path(allocator.substr(kPlugin.size())).stem().string()
          : std::string(allocator);
  std::filesystem::path out = path;
  out.replace_extension(fmt::format(".{}{}", label, path.extension().string()));
  return out;
}

std::unique_ptr<Allocator> make_allocator(const AllocatorSpec& spec, DeviceBackend& backend) {
  std::unique_ptr<Allocator> allocator = make_peer(spec, backend);
  if (spec.limit) {
    allocator = make_limiting_allocator(std::move(allocator), *spec.limit);
  }
  if (spec.trace) {
    allocator = make_tracing_allocator(std::move(allocator), *spec.trace, spec.flags.trace);
  }
  return allocator;
}

}  // namespace memstress
