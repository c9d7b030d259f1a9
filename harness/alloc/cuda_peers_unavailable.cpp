// The peers that need a real GPU, in the build without CUDA (Note [The build without CUDA],
// cmake/HostOnly.cmake): `--allocator async` and `--allocator plugin:PATH.so` (a library that calls
// cudaMalloc itself) are refused here, exit 3.

#include <fmt/format.h>

#include "harness/alloc/async_allocator.hpp"
#include "harness/alloc/plugin_allocator.hpp"
#include "harness/core/error.hpp"

namespace memstress {
namespace {

[[noreturn]] void not_built(std::string_view name, std::string_view what) {
  throw EnvironmentError(
      fmt::format("{} {}: this memstress was built without CUDA, and the allocator needs a real GPU; build "
                  "memstress from a checkout for it",
                  what, name));
}

}  // namespace

bool async_built() noexcept {
  return false;
}

void require_async_built(const AllocatorFlags& flags) {
  not_built("async", flags.name);
}

std::unique_ptr<Allocator> make_async_allocator(DeviceBackend& /*backend*/,
                                                std::uint64_t /*release_threshold*/,
                                                const AllocatorFlags& flags) {
  not_built("async", flags.name);
}

std::string plugin_peer_name(const PluginSpec& spec) {
  return spec.path;
}

bool is_plugin_name(std::string_view name) noexcept {
  return name.starts_with("plugin:");
}

PluginSpec parse_plugin_name(std::string_view name, std::string_view what) {
  not_built(name, what);
}

void check_plugin(const PluginSpec& spec) {
  not_built(spec.path, spec.what);
}

std::unique_ptr<Allocator> make_plugin_allocator(const PluginSpec& spec, DeviceBackend& /*backend*/) {
  not_built(spec.path, spec.what);
}

}  // namespace memstress
