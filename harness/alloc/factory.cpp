#include "harness/alloc/factory.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>

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

// The RMM peers come last: a build without RMM lists the names before them (allocator_names()).
#if defined(MEMSTRESS_HAVE_TORCH)
constexpr std::array<std::string_view, 8> kNames{"caching", "expandable", "direct",    "async",
                                                 "torch",   "rmm-pool",   "rmm-arena", "rmm-async"};
#else
constexpr std::array<std::string_view, 7> kNames{"caching",  "expandable", "direct",   "async",
                                                 "rmm-pool", "rmm-arena",  "rmm-async"};
#endif
constexpr std::size_t kRmmNames = 3;

[[noreturn]] void unknown(std::string_view name) {
  throw InputError(fmt::format("--allocator '{}': unknown allocator; choose one of: {}, or plugin:PATH.so",
                               name, fmt::join(allocator_names(), ", ")));
}

// A peer this build leaves out is missing from the environment, not a wrong name: exit 3, saying how to get
// it.
[[noreturn]] void torch_not_built() {
  throw EnvironmentError(
      "--allocator torch: this build has no torch peer; build the gpu-torch preset where PyTorch is "
      "installed");
}

std::unique_ptr<Allocator> make_peer(const AllocatorSpec& spec, DeviceBackend& backend) {
  AllocConfig config = AllocConfig::parse(spec.conf, "--alloc-conf");
  if (spec.name == "caching") {
    return std::make_unique<caching::CachingAllocator>(backend, std::move(config));
  }
  if (spec.name == "expandable") {
    config.expandable_segments = true;
    return std::make_unique<caching::CachingAllocator>(backend, std::move(config));
  }
  if (spec.name == "direct") {
    return std::make_unique<DirectAllocator>(backend);
  }
  if (spec.name == "async") {
    return make_async_allocator(backend, config.release_threshold.value_or(AllocConfig::kUnlimited));
  }
  if (const auto resource = rmm_resource(spec.name)) {
    return make_peer_statistics(make_rmm_allocator(*resource, backend, config));
  }
  if (is_plugin_name(spec.name)) {
    return make_peer_statistics(make_plugin_allocator(parse_plugin_name(spec.name), backend));
  }
  if (spec.name == "torch") {
#if defined(MEMSTRESS_HAVE_TORCH)
    return make_torch_allocator(backend);
#else
    torch_not_built();
#endif
  }
  unknown(spec.name);
}

}  // namespace

std::span<const std::string_view> allocator_names() noexcept {
  return std::span<const std::string_view>(kNames).first(kNames.size() - (rmm_built() ? 0 : kRmmNames));
}

void validate(const AllocatorSpec& spec) {
  static_cast<void>(AllocConfig::parse(spec.conf, "--alloc-conf"));
  const auto names = allocator_names();
  if (std::find(names.begin(), names.end(), spec.name) != names.end()) {
    return;
  }
  if (const auto resource = rmm_resource(spec.name)) {
    require_rmm_built(*resource);  // before any case runs
  }
  if (is_plugin_name(spec.name)) {
    check_plugin(parse_plugin_name(spec.name));
    return;
  }
  if (spec.name == "torch") {
    torch_not_built();
  }
  unknown(spec.name);
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
