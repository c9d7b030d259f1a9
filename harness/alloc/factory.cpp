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

// One peer --allocator names: what it is, whether this build has it (and the error saying how to get it
// where not), and how it is made from the parsed --alloc-conf.
struct Peer {
  std::string_view name;
  std::string_view description;
  bool (*built)() noexcept;
  void (*require_built)();  // throws EnvironmentError: exit 3, saying how to build it
  std::unique_ptr<Allocator> (*make)(AllocConfig config, DeviceBackend& backend);
};

bool always() noexcept {
  return true;
}
void nothing_to_require() {}

constexpr bool torch_built() noexcept {
#if defined(MEMSTRESS_HAVE_TORCH)
  return true;
#else
  return false;
#endif
}

// A peer this build leaves out is missing from the environment, not a wrong name: exit 3, saying how to get
// it.
void require_torch_built() {
  if (!torch_built()) {
    throw EnvironmentError(
        "--allocator torch: this build has no torch peer; build the gpu-torch preset where PyTorch is "
        "installed");
  }
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): Peer::make's signature (the caching peers move it)
std::unique_ptr<Allocator> make_torch([[maybe_unused]] AllocConfig config,
                                      [[maybe_unused]] DeviceBackend& backend) {
#if defined(MEMSTRESS_HAVE_TORCH)
  return make_torch_allocator(backend);
#else
  require_torch_built();
  return nullptr;  // not reached
#endif
}

template <RmmResource R>
constexpr Peer rmm_peer(std::string_view description) {
  return {rmm_peer_name(R), description, rmm_built, [] { require_rmm_built(R); },
          // NOLINTNEXTLINE(performance-unnecessary-value-param): Peer::make's signature
          [](AllocConfig config, DeviceBackend& backend) {
            return make_peer_statistics(make_rmm_allocator(R, backend, config));
          }};
}

// In the order `memstress list` shows them: a build without a peer lists the others (allocator_names()).
constexpr std::array kPeers{
    Peer{"caching", "PyTorch's caching allocator rules", always, nothing_to_require,
         [](AllocConfig config, DeviceBackend& backend) -> std::unique_ptr<Allocator> {
           return std::make_unique<caching::CachingAllocator>(backend, std::move(config));
         }},
    Peer{"expandable", "the caching allocator with expandable segments", always, nothing_to_require,
         [](AllocConfig config, DeviceBackend& backend) -> std::unique_ptr<Allocator> {
           config.expandable_segments = true;
           return std::make_unique<caching::CachingAllocator>(backend, std::move(config));
         }},
    Peer{"direct", "cudaMalloc and cudaFree for every block", always, nothing_to_require,
         // NOLINTNEXTLINE(performance-unnecessary-value-param): Peer::make's signature
         [](AllocConfig /*config*/, DeviceBackend& backend) -> std::unique_ptr<Allocator> {
           return std::make_unique<DirectAllocator>(backend);
         }},
    Peer{"async", "cudaMallocAsync, the driver's stream-ordered pool", async_built, require_async_built,
         // NOLINTNEXTLINE(performance-unnecessary-value-param): Peer::make's signature
         [](AllocConfig config, DeviceBackend& backend) {
           return make_async_allocator(backend, config.release_threshold.value_or(AllocConfig::kUnlimited));
         }},
    Peer{"torch", "PyTorch's own allocator (the gpu-torch preset)", torch_built, require_torch_built,
         make_torch},
    rmm_peer<RmmResource::pool>("RMM's pool over cudaMalloc"),
    rmm_peer<RmmResource::arena>("RMM's arena over cudaMalloc"),
    rmm_peer<RmmResource::async>("RMM's cudaMallocAsync resource"),
};

const Peer* find_peer(std::string_view name) noexcept {
  for (const Peer& peer : kPeers) {
    if (peer.name == name) {
      return &peer;
    }
  }
  return nullptr;
}

[[noreturn]] void unknown(std::string_view name) {
  throw InputError(fmt::format("--allocator '{}': unknown allocator; choose one of: {}, or plugin:PATH.so",
                               name, fmt::join(allocator_names(), ", ")));
}

std::unique_ptr<Allocator> make_peer(const AllocatorSpec& spec, DeviceBackend& backend) {
  AllocConfig config = AllocConfig::parse(spec.conf, "--alloc-conf");
  if (const Peer* peer = find_peer(spec.name)) {
    peer->require_built();
    return peer->make(std::move(config), backend);
  }
  if (is_plugin_name(spec.name)) {
    return make_peer_statistics(make_plugin_allocator(parse_plugin_name(spec.name), backend));
  }
  unknown(spec.name);
}

}  // namespace

std::string resolved_alloc_conf(std::string flag, const EnvLookup& env) {
  if (!flag.empty()) {
    return flag;
  }
  const char* value = env("MEMSTRESS_ALLOC_CONF");
  return value == nullptr ? std::string() : std::string(value);
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
  static_cast<void>(AllocConfig::parse(spec.conf, "--alloc-conf"));
  if (const Peer* peer = find_peer(spec.name)) {
    peer->require_built();  // before any case runs
    return;
  }
  if (is_plugin_name(spec.name)) {
    check_plugin(parse_plugin_name(spec.name));
    return;
  }
  unknown(spec.name);
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
    throw InputError("--allocator: name at least one allocator");
  }
  // Rows and snapshots name a plugin by its file: two libraries of one file name could not be told apart.
  std::map<std::string, std::string, std::less<>> reported;  // reported name -> the spec given
  for (const AllocatorSpec& a : specs) {
    const std::string name = is_plugin_name(a.name) ? plugin_peer_name(parse_plugin_name(a.name)) : a.name;
    if (const auto [it, added] = reported.emplace(name, a.name); !added && it->second != a.name) {
      throw InputError(
          fmt::format("--allocator: {} and {} would both be reported as {}; give them different "
                      "file names",
                      it->second, a.name, name));
    }
  }
  return specs;
}

std::unique_ptr<Allocator> make_allocator(const AllocatorSpec& spec, DeviceBackend& backend) {
  std::unique_ptr<Allocator> allocator = make_peer(spec, backend);
  if (spec.limit) {
    allocator = make_limiting_allocator(std::move(allocator), *spec.limit);
  }
  if (spec.trace) {
    allocator = make_tracing_allocator(std::move(allocator), *spec.trace);
  }
  return allocator;
}

}  // namespace memstress
