// The peers that need a real GPU, in the build without CUDA (Note [The build without CUDA],
// cmake/HostOnly.cmake): `--allocator async` and `--allocator plugin:PATH.so` (a library that calls
// cudaMalloc itself) are refused here, exit 3.

#include <fmt/format.h>

#include "harness/alloc/async_allocator.hpp"
#include "harness/alloc/plugin_allocator.hpp"
#include "harness/core/error.hpp"

namespace memstress {
namespace {

[[noreturn]] void not_built(std::string_view name) {
  throw EnvironmentError(fmt::format(
      "--allocator {}: this memstress was built without CUDA, and the allocator needs a real GPU; build "
      "memstress from a checkout for it",
      name));
}

}  // namespace

bool async_built() noexcept {
  return false;
}

void require_async_built() {
  not_built("async");
}

std::unique_ptr<Allocator> make_async_allocator(DeviceBackend& /*backend*/,
                                                std::uint64_t /*release_threshold*/) {
  not_built("async");
}

std::string plugin_peer_name(const PluginSpec& spec) {
  return spec.path;
}

bool is_plugin_name(std::string_view name) noexcept {
  return name.starts_with("plugin:");
}

PluginSpec parse_plugin_name(std::string_view name) {
  not_built(name);
}

void check_plugin(const PluginSpec& spec) {
  not_built(spec.path);
}

std::unique_ptr<Allocator> make_plugin_allocator(const PluginSpec& spec, DeviceBackend& /*backend*/) {
  not_built(spec.path);
}

}  // namespace memstress
