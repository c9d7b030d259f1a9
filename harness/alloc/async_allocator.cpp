// The `async` peer: cudaMallocFromPoolAsync / cudaFreeAsync on a pool of its own (make_async_allocator).
//
// Design note. The pool is created for the backend's device (pinned device memory, no IPC handles) and
// owned by a move-only RAII handle; its release threshold is the number of bytes it keeps cached over a
// synchronization (UINT64_MAX: everything; 0: it returns free memory at every synchronize). An
// allocation is made on the caller's stream and remembered with its size and stream; its free is
// enqueued on that same stream, so the memory returns to the pool when the stream reaches the free
// (the caller must free an allocation before destroying its stream). The pool reuses memory freed on
// other streams once those frees have completed (opportunistic reuse, on by default). A request for 0
// bytes is answered with nullptr.
//
// record_stream: an allocation used on other streams is freed on a stream of the allocator's own that
// first waits (through events) for its stream and every recorded one, so the memory returns to the
// pool only after all of them reach that point, and no caller's stream is made to wait for another
// (PyTorch's "unifying free stream").
//
// Out of memory: cudaErrorMemoryAllocation is cleared (it is not sticky), the whole device is
// synchronized, so frees still in flight on any stream complete and their memory becomes reusable, and
// the request is tried once more (PyTorch's cudaMallocAsync backend does the same); the retry is
// counted in num_alloc_retries. If it fails again, OutOfMemoryError names the request, the device's
// free and total memory, what this allocator holds and what its pool reserves.
//
// empty_cache synchronizes the device and trims the pool to 0 bytes. Statistics: allocated_bytes.all.*
// from this allocator's own counters (requested sizes), reserved_bytes.all.current/.peak from the
// pool's ReservedMemCurrent/ReservedMemHigh, num_ooms, num_alloc_retries; reset_peak_stats resets the
// pool's high-water mark too. The destructor synchronizes the device, frees what is still live (with a
// warning: it leaked) and destroys the pool, reporting failures on stderr, never throwing.

#include "harness/alloc/async_allocator.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstdio>
#include <limits>
#include <mutex>
#include <utility>

#include "harness/alloc/live_blocks.hpp"
#include "harness/core/cuda_check.hpp"
#include "harness/core/error.hpp"
#include "harness/core/units.hpp"
#include "harness/memory/backend.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "harness/stats/counter.hpp"

namespace memstress {
namespace {

// A stream-ordered memory pool of `device`'s memory, destroyed with its owner.
class MemPool {
 public:
  MemPool(int device, std::uint64_t release_threshold) {
    const cuda::ScopedDevice current(device);
    int supported = 0;
    MEMSTRESS_CUDA_TRY(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device));
    if (supported == 0) {
      throw EnvironmentError(fmt::format(
          "the async allocator needs stream-ordered memory pools (cudaMallocAsync), which device {} does "
          "not support",
          device));
    }
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    MEMSTRESS_CUDA_TRY(cudaMemPoolCreate(&pool_, &props));
    std::uint64_t threshold = release_threshold;
    try {
      MEMSTRESS_CUDA_TRY(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold));
    } catch (...) {
      MEMSTRESS_CUDA_WARN(cudaMemPoolDestroy(pool_));
      throw;
    }
  }
  ~MemPool() {
    if (pool_ != nullptr) {
      MEMSTRESS_CUDA_WARN(cudaMemPoolDestroy(pool_));
    }
  }
  MemPool(MemPool&& other) noexcept : pool_(std::exchange(other.pool_, nullptr)) {}
  MemPool& operator=(MemPool&&) = delete;
  MemPool(const MemPool&) = delete;
  MemPool& operator=(const MemPool&) = delete;

  [[nodiscard]] cudaMemPool_t get() const noexcept { return pool_; }

  [[nodiscard]] std::uint64_t attribute(cudaMemPoolAttr attr) const {
    std::uint64_t value = 0;
    MEMSTRESS_CUDA_TRY(cudaMemPoolGetAttribute(pool_, attr, &value));
    return value;
  }

 private:
  cudaMemPool_t pool_ = nullptr;
};

class AsyncAllocator final : public Allocator {
 public:
  AsyncAllocator(DeviceBackend& backend, std::uint64_t release_threshold)
      : backend_(backend),
        device_(backend.info().ordinal),
        release_threshold_(release_threshold),
        pool_(device_, release_threshold),
        free_stream_(stream_on(device_)) {}

  ~AsyncAllocator() override {
    try {
      const cuda::ScopedDevice current(device_);
      MEMSTRESS_CUDA_WARN(cudaDeviceSynchronize());
      const StatCounter held = live_.held();
      const auto leaked = live_.drain();
      if (!leaked.empty()) {
        std::fprintf(stderr,
                     "memstress: warning: async allocator on %s destroyed with %zu live allocations "
                     "(%s); freeing them\n",
                     backend_.info().label().c_str(), leaked.size(),
                     format_bytes(static_cast<std::uint64_t>(held.current)).c_str());
      }
      for (const auto& [ptr, live] : leaked) {
        MEMSTRESS_CUDA_WARN(cudaFree(ptr));  // legal for pool memory once its work has completed
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "memstress: warning: destroying the async allocator: %s\n", e.what());
    }
  }
  AsyncAllocator(const AsyncAllocator&) = delete;
  AsyncAllocator& operator=(const AsyncAllocator&) = delete;
  AsyncAllocator(AsyncAllocator&&) = delete;
  AsyncAllocator& operator=(AsyncAllocator&&) = delete;

  [[nodiscard]] std::string_view name() const noexcept override { return "async"; }
  [[nodiscard]] DeviceBackend& backend() const noexcept override { return backend_; }

  [[nodiscard]] MemoryStats memory_stats() const override {
    const cuda::ScopedDevice current(device_);
    MemoryStats stats;
    stats["reserved_bytes.all.current"] =
        static_cast<std::int64_t>(pool_.attribute(cudaMemPoolAttrReservedMemCurrent));
    stats["reserved_bytes.all.peak"] =
        static_cast<std::int64_t>(pool_.attribute(cudaMemPoolAttrReservedMemHigh));
    live_.held().export_to(stats, "allocated_bytes.all");
    const std::scoped_lock lock(mutex_);
    stats["num_ooms"] = num_ooms_;
    stats["num_alloc_retries"] = num_alloc_retries_;
    return stats;
  }

  void reset_peak_stats() override {
    const cuda::ScopedDevice current(device_);
    std::uint64_t zero = 0;  // the only value the high-water mark may be set to: it restarts from current
    MEMSTRESS_CUDA_TRY(cudaMemPoolSetAttribute(pool_.get(), cudaMemPoolAttrReservedMemHigh, &zero));
    live_.reset_peak();
  }

 private:
  static cuda::Stream stream_on(int device) {
    const cuda::ScopedDevice current(device);
    return {};
  }

  void* do_allocate(std::size_t bytes, StreamRef stream) override {
    if (bytes == 0) {
      return nullptr;
    }
    const cuda::ScopedDevice current(device_);
    void* ptr = nullptr;
    cudaError_t status = cudaMallocFromPoolAsync(&ptr, bytes, pool_.get(), stream.cuda());
    if (status == cudaErrorMemoryAllocation) {
      static_cast<void>(cudaGetLastError());
      {
        const std::scoped_lock lock(mutex_);
        ++num_alloc_retries_;
      }
      MEMSTRESS_CUDA_TRY(cudaDeviceSynchronize());
      status = cudaMallocFromPoolAsync(&ptr, bytes, pool_.get(), stream.cuda());
    }
    if (status == cudaErrorMemoryAllocation) {
      static_cast<void>(cudaGetLastError());
      throw out_of_memory(bytes, stream);
    }
    MEMSTRESS_CUDA_TRY(status);
    live_.add(ptr, bytes, stream, "async allocator");
    return ptr;
  }

  void do_deallocate(void* ptr) override {
    const cuda::ScopedDevice current(device_);
    live_.release(ptr, "async allocator", [&](const LiveBlocks::Block& live) {
      MEMSTRESS_CUDA_TRY(cudaFreeAsync(ptr, live.streams.free_stream(free_stream_.get()).cuda()));
    });
  }

  void do_record_stream(void* ptr, StreamRef stream) override {
    live_.record(ptr, stream, "async allocator");
  }

  void do_empty_cache() override {
    const cuda::ScopedDevice current(device_);
    MEMSTRESS_CUDA_TRY(cudaDeviceSynchronize());
    MEMSTRESS_CUDA_TRY(cudaMemPoolTrimTo(pool_.get(), 0));
  }

  OutOfMemoryError out_of_memory(std::size_t bytes, StreamRef stream) {
    const MemInfo mem = backend_.mem_info();
    const std::uint64_t reserved = pool_.attribute(cudaMemPoolAttrReservedMemCurrent);
    const std::scoped_lock lock(mutex_);
    ++num_ooms_;
    return OutOfMemoryError(fmt::format(
        "{}: out of memory allocating {} ({} bytes) with the async allocator (cudaMallocAsync) on stream "
        "{:#x}, after synchronizing the device and retrying: device {} has {} total, {} free; this "
        "allocator holds {} in {} allocations and its pool reserves {} (release threshold {})",
        backend_.info().label(), format_bytes(bytes), bytes, stream.id, backend_.info().name,
        format_bytes(mem.total), format_bytes(mem.free),
        format_bytes(static_cast<std::uint64_t>(live_.held().current)), live_.count(), format_bytes(reserved),
        release_threshold_ == std::numeric_limits<std::uint64_t>::max() ? std::string("unlimited")
                                                                        : format_bytes(release_threshold_)));
  }

  DeviceBackend& backend_;
  const int device_;
  const std::uint64_t release_threshold_;
  MemPool pool_;
  cuda::Stream free_stream_;  // frees of allocations used on several streams
  mutable std::mutex mutex_;
  LiveBlocks live_;
  std::int64_t num_ooms_ = 0;
  std::int64_t num_alloc_retries_ = 0;
};

}  // namespace

std::unique_ptr<Allocator> make_async_allocator(DeviceBackend& backend, std::uint64_t release_threshold,
                                                const AllocatorFlags& flags) {
  if (!backend.has_memory()) {
    throw EnvironmentError(fmt::format(
        "the async allocator needs a real GPU (cudaMallocAsync); running on the simulated device {}: "
        "choose another allocator (e.g. {} direct) or a CUDA device ({} cuda)",
        backend.info().label(), flags.name, flags.device));
  }
  return std::make_unique<AsyncAllocator>(backend, release_threshold);
}

bool async_built() noexcept {
  return true;
}

void require_async_built(const AllocatorFlags& /*flags*/) {}

}  // namespace memstress
