// The plugin peer (make_plugin_allocator): an allocator from a shared library with PyTorch's
// pluggable-allocator interface, behind the allocator seam, so a library written for PyTorch runs unchanged
// through every workload, replay, doctor and benchmark.
//
// Note [Allocator plugins]
// Loading: dlopen(RTLD_NOW | RTLD_LOCAL) of PATH, then the ALLOC and FREE functions (my_malloc and my_free
// unless `plugin:PATH:ALLOC:FREE` names them), which the library itself must define: dlsym also finds
// names in the libraries it depends on, and a plugin without a `free` of its own would otherwise be handed
// libc's. The library is never unmapped (RTLD_NODELETE, as PyTorch never closes one): its state outlives the
// peer, and memstress_plugin_bind(device, NULL) is how a peer says it is done.
//
// Calls: ALLOC(size, device, stream) as PyTorch makes it (null: out of memory) and FREE(ptr, size, device,
// stream) with the size, device and stream of the allocation, which the peer remembers, as PyTorch's
// CUDAPluggableAllocator does; a block that record_stream marked as used on other streams is freed on a
// stream of the peer's own that waited for all of them (StreamUses). A request for 0 bytes is answered
// with null without calling the plugin, and one the interface's ssize_t cannot carry (from a trace, say) is
// out of memory without calling it either.
//
// Device memory and "reserved" (see Note [What "reserved" is for each peer] in rmm_allocator.cpp):
//  - a plugin that exports memstress_plugin_bind is handed memstress's device backend (reserve/release), so
//  it
//    runs on the simulated device too, and its reserved bytes are exactly what it holds from the backend
//    (current and peak counted here);
//  - a plugin for PyTorch alone calls cudaMalloc itself and needs a real GPU. Its reserved bytes are not
//    visible to memstress: reserved_bytes.all.current is the device memory used now minus what was used when
//    the plugin was loaded (cudaMemGetInfo), never below what callers hold, sampled when statistics are read;
//    the peak is the largest of those samples and of what callers held. An estimate both ways: other
//    processes and memory taken outside the allocator count too, and a peak between two samples is missed.
//    The statistics say which: plugin_reserved_exact is 1 for the first kind, 0 otherwise.
// One plugin allocator per device at a time: the interface has no context argument, so a plugin keeps its
// state per device, and memstress builds one allocator per device (doctor replays plugins one at a time).
// allocated and requested bytes come from the statistics adaptor the factory wraps the peer in.
//
// Teardown: the device is synchronized, blocks still live are freed through FREE (with a warning: they
// leaked), memstress_plugin_empty_cache is called where exported, and memstress_plugin_bind(device, NULL)
// tells a bound plugin to return the rest before the backend goes away.

#include "harness/alloc/plugin_allocator.hpp"

#include <fmt/format.h>
#include <sys/types.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "harness/alloc/allocator_plugin.h"
#include "harness/alloc/live_blocks.hpp"
#include "harness/core/cuda_check.hpp"
#include "harness/core/error.hpp"
#include "harness/core/shared_library.hpp"
#include "harness/core/units.hpp"
#include "harness/memory/backend.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "harness/stats/counter.hpp"

namespace memstress {
namespace {

constexpr std::string_view kPrefix = "plugin:";

std::string flag_text(const PluginSpec& spec) {
  return fmt::format("{} plugin:{}", spec.what, spec.path);
}

// The functions of a loaded plugin: ALLOC and FREE, and memstress's optional two.
struct PluginApi {
  memstress_plugin_alloc_fn alloc = nullptr;
  memstress_plugin_free_fn free = nullptr;
  memstress_plugin_bind_fn bind = nullptr;
  memstress_plugin_empty_cache_fn empty_cache = nullptr;
};

template <typename Fn>
Fn as_function(void* address) noexcept {
  return reinterpret_cast<Fn>(address);  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
}

PluginApi resolve(const SharedLibrary& library, const PluginSpec& spec) {
  const auto required = [&](const std::string& symbol, std::string_view role) {
    void* address = library.own_symbol(symbol);
    if (address != nullptr) {
      return address;
    }
    const std::string elsewhere = library.provider_of(symbol);
    throw InputError(fmt::format(
        "{}: {} defines no function '{}' (its {} function{}); name the plugin's functions as "
        "plugin:PATH:ALLOC:FREE (default my_malloc, my_free; harness/alloc/allocator_plugin.h)",
        flag_text(spec), spec.path, symbol, role,
        elsewhere.empty() ? std::string() : fmt::format("; the name resolves only to {}", elsewhere)));
  };
  PluginApi api;
  api.alloc = as_function<memstress_plugin_alloc_fn>(required(spec.alloc_fn, "allocate"));
  api.free = as_function<memstress_plugin_free_fn>(required(spec.free_fn, "free"));
  api.bind = as_function<memstress_plugin_bind_fn>(library.own_symbol("memstress_plugin_bind"));
  api.empty_cache =
      as_function<memstress_plugin_empty_cache_fn>(library.own_symbol("memstress_plugin_empty_cache"));
  return api;
}

class PluginAllocator final : public Allocator {
 public:
  PluginAllocator(const PluginSpec& spec, DeviceBackend& backend)
      : spec_(spec),
        library_(spec.path, flag_text(spec)),
        api_(resolve(library_, spec)),
        backend_(backend),
        device_(backend.info().ordinal),
        name_(plugin_peer_name(spec)) {
    if (api_.bind == nullptr && !backend.has_memory()) {
      throw EnvironmentError(fmt::format(
          "{}: the plugin exports no memstress_plugin_bind, so it allocates with CUDA itself and needs a "
          "real "
          "GPU; running on the simulated device {} (harness/alloc/allocator_plugin.h says how a plugin takes "
          "memstress's device memory)",
          flag_text(spec), backend.info().label()));
    }
    if (api_.bind != nullptr) {
      host_ = memstress_plugin_host{MEMSTRESS_PLUGIN_ABI_VERSION, this, &PluginAllocator::host_reserve,
                                    &PluginAllocator::host_release};
      api_.bind(device_, &host_);
    } else {
      baseline_used_ = used_on_device();
    }
  }

  ~PluginAllocator() override {
    try {
      synchronize();
      const auto leaked = live_.drain();
      if (!leaked.empty()) {
        std::fprintf(stderr,
                     "memstress: warning: %s on %s destroyed with %zu live allocations; freeing them\n",
                     name_.c_str(), backend_.info().label().c_str(), leaked.size());
      }
      for (const auto& [ptr, live] : leaked) {  // on the legacy stream: the caller's may be gone by now
        api_.free(ptr, static_cast<ssize_t>(live.bytes), device_, nullptr);
      }
      if (api_.empty_cache != nullptr) {
        api_.empty_cache(device_);
      }
      if (api_.bind != nullptr) {
        api_.bind(device_, nullptr);
      }
      synchronize();  // nothing the plugin enqueued may run after its library is unloaded
    } catch (const std::exception& e) {
      std::fprintf(stderr, "memstress: warning: destroying %s: %s\n", name_.c_str(), e.what());
    }
  }
  PluginAllocator(const PluginAllocator&) = delete;
  PluginAllocator& operator=(const PluginAllocator&) = delete;
  PluginAllocator(PluginAllocator&&) = delete;
  PluginAllocator& operator=(PluginAllocator&&) = delete;

  [[nodiscard]] std::string_view name() const noexcept override { return name_; }
  [[nodiscard]] DeviceBackend& backend() const noexcept override { return backend_; }

  [[nodiscard]] MemoryStats memory_stats() const override {
    const std::uint64_t used = api_.bind != nullptr ? 0 : used_on_device();
    const std::scoped_lock lock(mutex_);
    if (api_.bind == nullptr) {
      sample_reserved(used);
    }
    MemoryStats stats;
    reserved_.export_to(stats, "reserved_bytes.all");
    stats["plugin_reserved_exact"] = api_.bind != nullptr ? 1 : 0;
    return stats;
  }

  void reset_peak_stats() override {
    const std::uint64_t used = api_.bind != nullptr ? 0 : used_on_device();
    const std::scoped_lock lock(mutex_);
    if (api_.bind == nullptr) {
      sample_reserved(used);
    }
    reserved_.reset_peak();
  }

 private:
  static void* host_reserve(void* context, std::size_t bytes, int /*device*/) {
    auto* self = static_cast<PluginAllocator*>(context);
    try {
      void* ptr = self->backend_.try_reserve(bytes);
      if (ptr != nullptr) {
        const std::scoped_lock lock(self->mutex_);
        self->reserved_.add(static_cast<std::int64_t>(bytes));
      }
      return ptr;
    } catch (const std::exception& e) {  // never across the C boundary: the plugin sees an OOM
      std::fprintf(stderr, "memstress: warning: %s: reserving %zu bytes: %s\n", self->name_.c_str(), bytes,
                   e.what());
    } catch (...) {
      std::fprintf(stderr, "memstress: warning: %s: reserving %zu bytes failed\n", self->name_.c_str(),
                   bytes);
    }
    return nullptr;
  }

  static void host_release(void* context, void* ptr, std::size_t bytes, int /*device*/) {
    auto* self = static_cast<PluginAllocator*>(context);
    try {
      self->backend_.release(ptr, bytes);
      const std::scoped_lock lock(self->mutex_);
      self->reserved_.sub(static_cast<std::int64_t>(bytes));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "memstress: warning: %s: releasing %zu bytes: %s\n", self->name_.c_str(), bytes,
                   e.what());
    } catch (...) {
      std::fprintf(stderr, "memstress: warning: %s: releasing %zu bytes failed\n", self->name_.c_str(),
                   bytes);
    }
  }

  [[nodiscard]] std::uint64_t used_on_device() const {
    const MemInfo mem = backend_.mem_info();
    return mem.total - mem.free;
  }

  // An unbound plugin's reserved bytes, estimated from the device's used memory (caller holds mutex_).
  void sample_reserved(std::uint64_t used) const {
    const std::int64_t estimate = std::max<std::int64_t>(
        static_cast<std::int64_t>(used) - static_cast<std::int64_t>(baseline_used_), live_.held().current);
    reserved_.add(estimate - reserved_.current);
  }

  void synchronize() const {
    if (backend_.has_memory()) {
      const cuda::ScopedDevice current(device_);
      MEMSTRESS_CUDA_WARN(cudaDeviceSynchronize());
    }
  }

  void* do_allocate(std::size_t bytes, StreamRef stream) override {
    if (bytes == 0) {
      return nullptr;
    }
    if (bytes > static_cast<std::size_t>(std::numeric_limits<ssize_t>::max())) {
      throw OutOfMemoryError(fmt::format(
          "{}: out of memory: tried to allocate {} bytes with {}, more than PyTorch's pluggable-allocator "
          "interface can pass (its size is an ssize_t)",
          backend_.info().label(), bytes, name_));
    }
    void* ptr = nullptr;
    {
      std::optional<cuda::ScopedDevice> current;  // none on the simulated device: no CUDA there
      if (backend_.has_memory()) {
        current.emplace(device_);
      }
      ptr = api_.alloc(static_cast<ssize_t>(bytes), device_, stream.cuda());
    }
    if (ptr == nullptr) {
      throw out_of_memory(bytes, stream);
    }
    live_.add(ptr, bytes, stream, name_);
    if (api_.bind == nullptr) {
      const std::int64_t held = live_.held().current;
      const std::scoped_lock lock(mutex_);
      if (held > reserved_.peak) {
        reserved_.add(held - reserved_.current);  // the estimate never falls below what callers hold
      }
    }
    return ptr;
  }

  void do_deallocate(void* ptr) override {
    if (!backend_.has_memory()) {
      const LiveBlocks::Block live = live_.take(ptr, name_);
      api_.free(ptr, static_cast<ssize_t>(live.bytes), device_, live.streams.own().cuda());
      return;
    }
    const cuda::ScopedDevice current(device_);
    live_.release(ptr, name_, [&](const LiveBlocks::Block& live) {
      const StreamRef on = live.streams.free_stream(free_stream().get());
      api_.free(ptr, static_cast<ssize_t>(live.bytes), device_, on.cuda());
    });
  }

  void do_record_stream(void* ptr, StreamRef stream) override {
    if (backend_.has_memory()) {  // the simulated device runs no work on its streams
      live_.record(ptr, stream, name_);
    }
  }

  void do_empty_cache() override {
    if (api_.empty_cache != nullptr) {
      synchronize();
      api_.empty_cache(device_);
    }
  }

  // The peer's own stream for frees of blocks used on several streams, made on first need.
  const cuda::Stream& free_stream() {
    const std::scoped_lock lock(stream_mutex_);
    if (!free_stream_) {
      const cuda::ScopedDevice current(device_);
      free_stream_ = std::make_unique<cuda::Stream>();
    }
    return *free_stream_;
  }

  OutOfMemoryError out_of_memory(std::size_t bytes, StreamRef stream) const {
    const MemInfo mem = backend_.mem_info();
    const MemoryStats stats = memory_stats();
    const std::scoped_lock lock(mutex_);
    return OutOfMemoryError(fmt::format(
        "{}: out of memory allocating {} ({} bytes) with {} ({} returned null) on stream {:#x}: device {} "
        "has "
        "{} total, {} free; this allocator holds {} in {} allocations and reserves {}{}",
        backend_.info().label(), format_bytes(bytes), bytes, name_, spec_.alloc_fn, stream.id,
        backend_.info().name, format_bytes(mem.total), format_bytes(mem.free),
        format_bytes(static_cast<std::uint64_t>(live_.held().current)), live_.count(),
        format_bytes(static_cast<std::uint64_t>(stats.at("reserved_bytes.all.current"))),
        api_.bind != nullptr ? "" : " (estimated from the device's used memory)"));
  }

  const PluginSpec spec_;
  SharedLibrary library_;  // declared first: unloaded last
  PluginApi api_;
  DeviceBackend& backend_;
  const int device_;
  const std::string name_;
  memstress_plugin_host host_{};
  std::uint64_t baseline_used_ = 0;
  mutable std::mutex mutex_;
  LiveBlocks live_;
  mutable StatCounter reserved_;
  std::mutex stream_mutex_;
  std::unique_ptr<cuda::Stream> free_stream_;
};

}  // namespace

std::string plugin_peer_name(const PluginSpec& spec) {
  return fmt::format("plugin:{}", std::filesystem::path(spec.path).filename().string());
}

bool is_plugin_name(std::string_view name) noexcept {
  return name.starts_with(kPrefix);
}

PluginSpec parse_plugin_name(std::string_view name, std::string_view what) {
  std::string_view rest = name.substr(kPrefix.size());
  std::error_code error;
  if (!rest.empty() && std::filesystem::is_regular_file(std::filesystem::path(rest), error)) {
    PluginSpec whole;  // a path with colons in it, and the default names
    whole.path = std::string(rest);
    whole.what = std::string(what);
    return whole;
  }
  std::vector<std::string_view> parts;
  for (std::size_t at = rest.find(':'); at != std::string_view::npos; at = rest.find(':')) {
    parts.push_back(rest.substr(0, at));
    rest.remove_prefix(at + 1);
  }
  parts.push_back(rest);
  PluginSpec spec;
  spec.what = std::string(what);
  if (parts.size() == 2) {
    throw InputError(fmt::format(
        "{} {}: give both function names or neither: plugin:PATH or plugin:PATH:ALLOC:FREE", what, name));
  }
  if (parts.size() >= 3) {
    spec.alloc_fn = std::string(parts[parts.size() - 2]);
    spec.free_fn = std::string(parts.back());
    parts.resize(parts.size() - 2);
  }
  std::string path;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    path += (i == 0 ? "" : ":") + std::string(parts[i]);
  }
  spec.path = path;
  if (spec.path.empty() || spec.alloc_fn.empty() || spec.free_fn.empty()) {
    throw InputError(
        fmt::format("{} {}: expected plugin:PATH or plugin:PATH:ALLOC:FREE (a shared library with PyTorch's "
                    "pluggable-allocator functions)",
                    what, name));
  }
  if (!std::filesystem::is_regular_file(spec.path, error)) {
    throw InputError(fmt::format("{} {}: {} is not a file", what, name, spec.path));
  }
  return spec;
}

void check_plugin(const PluginSpec& spec) {
  const SharedLibrary library(spec.path, flag_text(spec));
  static_cast<void>(resolve(library, spec));
}

std::unique_ptr<Allocator> make_plugin_allocator(const PluginSpec& spec, DeviceBackend& backend) {
  return std::make_unique<PluginAllocator>(spec, backend);
}

}  // namespace memstress
