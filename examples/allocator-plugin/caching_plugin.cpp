// An example allocator plugin: a small caching allocator with PyTorch's pluggable-allocator interface
// (my_malloc / my_free), loadable unchanged by PyTorch
//   torch.cuda.memory.change_current_allocator(
//       torch.cuda.memory.CUDAPluggableAllocator("libmemstress_caching_plugin.so", "my_malloc", "my_free"))
// and by memstress (`--allocator plugin:libmemstress_caching_plugin.so`), plus memstress's two optional hooks
// (harness/alloc/allocator_plugin.h): with memstress_plugin_bind it takes device memory from memstress's
// backend, so it also runs on the simulated device and memstress counts its reserved bytes exactly; without
// a binding (in PyTorch) it uses cudaMalloc / cudaFree.
//
// Policy, deliberately simple: sizes round up to a power of two from 512 B to 1 MiB and to a multiple of
// 2 MiB above; a freed block is cached for its device, stream and rounded size and handed to the next
// request of that size on that stream (stream order makes that safe without events); when the device
// refuses memory, the device's whole cache is returned (cudaFree synchronizes) and the request is tried once
// more. One mutex guards everything: thread-safe, as both callers require.
//
// The interface is a set of C functions, so the plugin's state is one object with static storage.

#include <cuda_runtime_api.h>
#include <sys/types.h>

#include <array>
#include <cstddef>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "harness/alloc/allocator_plugin.h"

namespace {

constexpr std::size_t kMaxDevices = 64;

std::size_t round_size(std::size_t size) {
  constexpr std::size_t kMin = 512;
  constexpr std::size_t kSmall = 1 << 20;
  constexpr std::size_t kLargeStep = 2 << 20;
  if (size <= kSmall) {
    std::size_t rounded = kMin;
    while (rounded < size) {
      rounded <<= 1U;
    }
    return rounded;
  }
  return (size + kLargeStep - 1) / kLargeStep * kLargeStep;
}

class CachingPlugin {
 public:
  void* allocate(std::size_t size, int device, cudaStream_t stream) {
    if (device < 0 || static_cast<std::size_t>(device) >= kMaxDevices) {
      return nullptr;
    }
    const std::size_t rounded = round_size(size);
    const std::scoped_lock lock(mutex_);
    auto& cached = cache_[Key{device, stream, rounded}];
    if (!cached.empty()) {
      void* ptr = cached.back();
      cached.pop_back();
      sizes_[ptr] = rounded;
      return ptr;
    }
    void* ptr = reserve(rounded, device);
    if (ptr == nullptr) {
      release_cached(device);
      ptr = reserve(rounded, device);
    }
    if (ptr != nullptr) {
      sizes_[ptr] = rounded;
    }
    return ptr;
  }

  void free(void* ptr, int device, cudaStream_t stream) {
    const std::scoped_lock lock(mutex_);
    const auto it = sizes_.find(ptr);
    if (it == sizes_.end()) {
      return;
    }
    cache_[Key{device, stream, it->second}].push_back(ptr);
    sizes_.erase(it);
  }

  void empty_cache(int device) {
    const std::scoped_lock lock(mutex_);
    release_cached(device);
  }

  void bind(int device, const memstress_plugin_host* host) {
    if (device < 0 || static_cast<std::size_t>(device) >= kMaxDevices) {
      return;
    }
    const std::scoped_lock lock(mutex_);
    release_cached(device);  // what the old source gave goes back to it
    hosts_[static_cast<std::size_t>(device)] =
        host != nullptr && host->abi_version == MEMSTRESS_PLUGIN_ABI_VERSION ? *host
                                                                             : memstress_plugin_host{};
  }

 private:
  using Key = std::tuple<int, cudaStream_t, std::size_t>;

  [[nodiscard]] const memstress_plugin_host* host_of(int device) const {
    const memstress_plugin_host& host = hosts_[static_cast<std::size_t>(device)];
    return host.reserve != nullptr ? &host : nullptr;
  }

  void* reserve(std::size_t bytes, int device) {
    if (const memstress_plugin_host* host = host_of(device)) {
      return host->reserve(host->context, bytes, device);
    }
    int previous = 0;
    void* ptr = nullptr;
    if (cudaGetDevice(&previous) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) {
      return nullptr;
    }
    if (cudaMalloc(&ptr, bytes) != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      ptr = nullptr;
    }
    static_cast<void>(cudaSetDevice(previous));
    return ptr;
  }

  void release(void* ptr, std::size_t bytes, int device) {
    if (const memstress_plugin_host* host = host_of(device)) {
      host->release(host->context, ptr, bytes, device);
      return;
    }
    static_cast<void>(cudaFree(ptr));  // synchronizes: no stream still uses it
  }

  void release_cached(int device) {
    for (auto it = cache_.begin(); it != cache_.end();) {
      const auto& [key_device, stream, bytes] = it->first;
      if (key_device != device) {
        ++it;
        continue;
      }
      for (void* ptr : it->second) {
        release(ptr, bytes, device);
      }
      it = cache_.erase(it);
    }
  }

  std::mutex mutex_;
  std::map<Key, std::vector<void*>> cache_;
  std::unordered_map<void*, std::size_t> sizes_;  // live block -> rounded size
  std::array<memstress_plugin_host, kMaxDevices> hosts_{};
};

CachingPlugin& plugin() {
  static CachingPlugin instance;
  return instance;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void* my_malloc(ssize_t size, int device, cudaStream_t stream) {
  return size <= 0 ? nullptr : plugin().allocate(static_cast<std::size_t>(size), device, stream);
}

__attribute__((visibility("default"))) void my_free(void* ptr, ssize_t /*size*/, int device,
                                                    cudaStream_t stream) {
  plugin().free(ptr, device, stream);
}

__attribute__((visibility("default"))) void memstress_plugin_bind(int device,
                                                                  const memstress_plugin_host* host) {
  plugin().bind(device, host);
}

__attribute__((visibility("default"))) void memstress_plugin_empty_cache(int device) {
  plugin().empty_cache(device);
}

}  // extern "C"
