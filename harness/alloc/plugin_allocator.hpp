#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "harness/alloc/allocator.hpp"

namespace memstress {

// `--allocator plugin:PATH[:ALLOC:FREE]`: an allocator from a shared library with PyTorch's
// pluggable-allocator interface (harness/alloc/allocator_plugin.h; plugin_allocator.cpp has the design note).
struct PluginSpec {
  std::string path;
  std::string alloc_fn = "my_malloc";
  std::string free_fn = "my_free";
  std::string what;  // the command's flag that named it, in the errors
};

// The peer's name in results and snapshots: "plugin:" and the library's file name ("plugin:liba.so").
[[nodiscard]] std::string plugin_peer_name(const PluginSpec& spec);
// Whether `name` asks for a plugin ("plugin:" prefix).
[[nodiscard]] bool is_plugin_name(std::string_view name) noexcept;
// Parses `plugin:PATH[:ALLOC:FREE]` (given by `what`, the command's flag) and checks that PATH is a readable
// file; InputError naming `what` and `name`.
[[nodiscard]] PluginSpec parse_plugin_name(std::string_view name, std::string_view what);
// Loads the plugin and resolves its functions, then unloads it: InputError for one that does not load or
// lacks a function (what validate() checks before any work starts).
void check_plugin(const PluginSpec& spec);
// Loads the plugin (InputError for a library that does not load or lacks a symbol, EnvironmentError for one
// that cannot run on this device) and returns the peer; the factory wraps it in the statistics adaptor.
std::unique_ptr<Allocator> make_plugin_allocator(const PluginSpec& spec, DeviceBackend& backend);

}  // namespace memstress
