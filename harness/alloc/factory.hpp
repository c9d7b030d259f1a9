#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/alloc/alloc_config.hpp"
#include "harness/alloc/allocator.hpp"
#include "harness/alloc/allocator_flags.hpp"
#include "harness/core/launcher.hpp"

namespace memstress {

// What a command's allocator flags ask for (run's --allocator, --alloc-conf, --alloc-limit and
// --alloc-trace), parsed by the command: the settings are parsed once, where they are given, and carried.
struct AllocatorSpec {
  std::string name = "caching";
  AllocConfig conf;                            // PyTorch syntax (alloc_config.hpp); {} = defaults
  std::optional<std::uint64_t> limit;          // LimitingAllocator cap
  std::optional<std::filesystem::path> trace;  // TracingAllocator output
  AllocatorFlags flags{};                      // the command's flags that gave the above, for the errors
};

// A command's allocator settings as given (`flag`), else $MEMSTRESS_ALLOC_CONF, else "" (the allocators'
// defaults).
std::string resolved_alloc_conf(std::string flag, const EnvLookup& env = process_env());

// A peer --allocator names (Note [The peers in one place], factory.cpp).
struct PeerInfo {
  std::string_view name;
  std::string_view origin;  // whose allocator it is: "memstress", "PyTorch", "CUDA" or "RMM"
  std::string_view what;    // what it is, as docs/run.md's allocator table says it
  bool simulated = false;   // runs on the simulated device too (the others need a real GPU)
  bool baseline = false;    // what the others are measured against (direct: the driver for every block)
  bool built = false;       // in this build
};

// Every peer, built or not, in the order `memstress list` shows them.
std::vector<PeerInfo> allocator_peers();

// The peer a user brings (--allocator plugin:..., plugin_allocator.hpp), as `memstress list` names it.
inline constexpr std::string_view kPluginForm = "plugin:PATH.so[:ALLOC:FREE]";
inline constexpr std::string_view kPluginWhat =
    "an allocator you bring: a shared library with PyTorch's pluggable-allocator functions";

// The allocator names --allocator accepts that this build has, in the order `memstress list` shows them.
std::vector<std::string_view> allocator_names();

// Checks the name without building anything (InputError naming the allocator).
void validate(const AllocatorSpec& spec);

// --allocator a,b,c: a spec for each name, with `common`'s config, limit, trace and flags, each validated.
// Throws InputError (naming common.flags.name) for an empty list, and for two plugins whose rows would bear
// one name (the library's file).
std::vector<AllocatorSpec> allocator_specs(std::string_view names, const AllocatorSpec& common);

// A file of one allocator's among `several` (run --snapshot with --allocator a,b): `path` with the
// allocator's name before the extension; a plugin by its library's name, with no directory in the file name
// ("plugin:/opt/lib/liba.so", the flag, and "plugin:liba.so", the peer's name, are both "plugin-liba").
std::filesystem::path path_for_allocator(const std::filesystem::path& path, std::string_view allocator,
                                         bool several);

// Builds the allocator and its adaptors over `backend` (innermost first: the peer, then the limit, then
// tracing, so the trace sees every request including those the limit refuses). Throws InputError naming
// spec.flags' flag for an unknown name or a bad config, EnvironmentError when the peer needs a real GPU.
std::unique_ptr<Allocator> make_allocator(const AllocatorSpec& spec, DeviceBackend& backend);
inline std::unique_ptr<Allocator> make_allocator(std::string_view name, DeviceBackend& backend) {
  AllocatorSpec spec;
  spec.name = std::string(name);
  return make_allocator(spec, backend);
}

}  // namespace memstress
