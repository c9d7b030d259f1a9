// The rmm-pool, rmm-arena and rmm-async peers (make_rmm_allocator): RAPIDS RMM's memory resources behind
// the allocator seam, so that every workload, replay, doctor and benchmark can run through them.
//
// Note [What "reserved" is for each peer]
// memstress reports every peer's memory in PyTorch's terms: allocated = the bytes callers asked for and
// still hold, reserved = the device memory the allocator holds to serve them, whether in use or cached.
// RMM keeps no such statistics by these names, so the factory wraps each RMM peer in memstress's
// statistics adaptor (allocated_bytes, requested_bytes, allocation counts and num_ooms, counted at the
// seam exactly as for the async and plugin peers), and the peer itself reports reserved:
//   rmm-pool   pool_memory_resource(statistics_resource_adaptor(cuda_memory_resource), initial 0): the
//              bytes the pool got from cudaMalloc, counted by RMM's own statistics_resource_adaptor between
//              the pool and cuda_memory_resource. The pool grows on demand and never shrinks while it
//              lives: RMM has no call that returns a pool's free blocks.
//   rmm-arena  arena_memory_resource(statistics_resource_adaptor(cuda_memory_resource)): the same count.
//              The arena takes its whole global arena from cudaMalloc when it is built (RMM's default:
//              half the device's free memory, or per_process_memory_fraction of the capacity when
//              --alloc-conf sets it), so its reserved is that size from the start and its OOM threshold is
//              the arena, not the device. A rebuild after empty_cache takes the same size as the first
//              arena, so every case of a run sees one arena.
//   rmm-async  cuda_async_memory_resource (cudaMallocAsync on a pool of RMM's own): the pool's
//              ReservedMemCurrent / ReservedMemHigh, as for memstress's own async peer;
//              release_threshold_mb sets its release threshold and empty_cache trims the pool to 0.
// allocated: the caching peers (caching, expandable, torch) count a block's rounded size, as PyTorch's
// allocated_bytes does; the adaptor counts the bytes asked for (RMM's own rounding is not visible at the
// seam). requested_bytes is the bytes asked for in both, so peak requested / peak reserved is the one
// utilization that means the same for every peer (scripts/report_allocators.py draws it beside the other).
// For rmm-pool, per_process_memory_fraction caps the pool (maximum_pool_size).
// empty_cache: rmm-async trims its pool to 0. rmm-pool and rmm-arena, when nothing is allocated, destroy the
// resource (RMM's destructor is its only way to return their memory) and build it again at the next
// allocation; with blocks live it does nothing. Without this a pool that an OOM search grew to the whole GPU
// would keep it for the rest of the run, and the next workload's own allocations (NCCL's buffers) fail.
// Calls into the resource hold a shared lock, empty_cache an exclusive one; a block is recorded and
// removed while the lock is held, so empty_cache never destroys a resource with a block still out.
//
// Streams: RMM's resources are stream-ordered. An allocation is made on the caller's stream and freed on
// it; one that record_stream marked as used on other streams is freed on a stream of the peer's own that
// first waits for all of them (StreamUses), so RMM reuses it only after their work. RMM needs the size
// of a free, so the peer keeps pointer -> {size, streams}.
//
// Out of memory: RMM throws rmm::out_of_memory; the peer counts it and throws OutOfMemoryError with the
// request, the device's free and total memory, what the peer holds and reserves, and RMM's message. RMM
// does not synchronize and retry, and neither does the peer: the figures are RMM's own behaviour.
//
// The wheel's librmm.so links its own (static, hidden) CUDA runtime; both runtimes share the driver's
// primary context, so streams and the current device mean the same to both.

#include "harness/alloc/rmm_allocator.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cuda/stream_ref>
#include <mutex>
#include <optional>
#include <rmm/error.hpp>
#include <rmm/logger.hpp>
#include <rmm/mr/arena_memory_resource.hpp>
#include <rmm/mr/cuda_async_memory_resource.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <shared_mutex>
#include <unordered_map>
#include <utility>

#include "harness/alloc/alloc_config.hpp"
#include "harness/alloc/live_blocks.hpp"
#include "harness/core/cuda_check.hpp"
#include "harness/core/error.hpp"
#include "harness/core/units.hpp"
#include "harness/memory/backend.hpp"
#include "harness/memory/cuda_handles.hpp"

namespace memstress {
namespace {

using DeviceResource = ::cuda::mr::any_resource<::cuda::mr::device_accessible>;
constexpr std::size_t kAlignment = 256;

// Bytes a resource holds from cudaMalloc, with a peak that can be reset: RMM's statistics adaptor keeps a
// stack of counters; a reset merges the pushed one back and pushes a fresh one, whose peak then counts
// from the bytes held at the reset (`base_`).
class UpstreamCount {
 public:
  UpstreamCount() : counted_(DeviceResource(rmm::mr::cuda_memory_resource{})) {}

  [[nodiscard]] const rmm::mr::statistics_resource_adaptor& resource() const noexcept { return counted_; }
  // Reserved bytes now and at their peak since the last reset, from one reading of RMM's counter.
  [[nodiscard]] std::pair<std::int64_t, std::int64_t> current_and_peak() const {
    const auto counter = counted_.get_bytes_counter();
    return {base_ + counter.value, base_ + counter.peak};
  }
  void reset_peak() {
    if (pushed_) {
      counted_.pop_counters();
    }
    // push_counters returns the bottom counter as it stood when the fresh one was pushed (under RMM's lock),
    // so an expansion by another thread in between is counted in one of the two, never lost.
    base_ = counted_.push_counters().first.value;
    pushed_ = true;
  }

 private:
  rmm::mr::statistics_resource_adaptor counted_;
  std::int64_t base_ = 0;
  bool pushed_ = false;
};

class RmmAllocator final : public Allocator {
 public:
  RmmAllocator(RmmResource kind, DeviceBackend& backend, const AllocConfig& config, AllocatorFlags flags)
      : kind_(kind),
        flags_(std::move(flags)),
        backend_(backend),
        device_(backend.info().ordinal),
        config_fraction_(config.memory_fraction),
        limit_(fraction_of_capacity(config, backend)),
        release_threshold_(config.release_threshold && *config.release_threshold != AllocConfig::kUnlimited
                               ? std::optional<std::size_t>(*config.release_threshold)
                               : std::nullopt),
        free_stream_(stream_on(device_)) {
    // RMM logs every failed pool expansion at error level (dozens of lines in one OOM search); memstress
    // reports each OOM itself, so RMM's logger says only what is critical.
    rmm::default_logger().set_level(rapids_logger::level_enum::critical);
    const cuda::ScopedDevice current(device_);
    if (kind_ != RmmResource::async) {
      upstream_.emplace();
    }
    resource_.emplace(first_resource());
  }

  ~RmmAllocator() override {
    try {
      const cuda::ScopedDevice current(device_);
      MEMSTRESS_CUDA_WARN(cudaDeviceSynchronize());
      const auto leaked = live_.drain();
      if (!leaked.empty()) {
        std::fprintf(stderr,
                     "memstress: warning: %s on %s destroyed with %zu live allocations; freeing them\n",
                     std::string(name()).c_str(), backend_.info().label().c_str(), leaked.size());
      }
      for (const auto& [ptr, live] : leaked) {
        // On the peer's own stream: the caller's may be gone by now (the device was synchronized above).
        resource_->deallocate(::cuda::stream_ref(free_stream_.get()), ptr, live.bytes, kAlignment);
      }
      MEMSTRESS_CUDA_WARN(cudaDeviceSynchronize());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "memstress: warning: destroying %s: %s\n", std::string(name()).c_str(), e.what());
    }
  }
  RmmAllocator(const RmmAllocator&) = delete;
  RmmAllocator& operator=(const RmmAllocator&) = delete;
  RmmAllocator(RmmAllocator&&) = delete;
  RmmAllocator& operator=(RmmAllocator&&) = delete;

  [[nodiscard]] std::string_view name() const noexcept override { return rmm_peer_name(kind_); }
  [[nodiscard]] DeviceBackend& backend() const noexcept override { return backend_; }

  [[nodiscard]] MemoryStats memory_stats() const override {
    MemoryStats stats;
    if (async_) {
      const cuda::ScopedDevice current(device_);
      stats["reserved_bytes.all.current"] = pool_attribute(cudaMemPoolAttrReservedMemCurrent);
      stats["reserved_bytes.all.peak"] = pool_attribute(cudaMemPoolAttrReservedMemHigh);
    }
    const std::scoped_lock lock(mutex_);
    if (upstream_) {
      const auto [current, peak] = upstream_->current_and_peak();
      stats["reserved_bytes.all.current"] = current;
      stats["reserved_bytes.all.peak"] = peak;
    }
    stats["num_ooms"] = num_ooms_;
    return stats;
  }

  void reset_peak_stats() override {
    if (async_) {
      const cuda::ScopedDevice current(device_);
      std::uint64_t zero = 0;  // the high-water mark restarts from the current reservation
      MEMSTRESS_CUDA_TRY(
          cudaMemPoolSetAttribute(async_->pool_handle(), cudaMemPoolAttrReservedMemHigh, &zero));
    }
    const std::scoped_lock lock(mutex_);
    if (upstream_) {
      upstream_->reset_peak();
    }
  }

 private:
  static cuda::Stream stream_on(int device) {
    const cuda::ScopedDevice current(device);
    return cuda::Stream();
  }

  static std::optional<std::size_t> fraction_of_capacity(const AllocConfig& config,
                                                         const DeviceBackend& backend) {
    if (!config.memory_fraction) {
      return std::nullopt;
    }
    const double bytes = *config.memory_fraction * static_cast<double>(backend.info().capacity);
    return static_cast<std::size_t>(bytes) / kAlignment * kAlignment;
  }

  // The first resource. RMM's errors here come from the settings or the device's state, not from a
  // workload: an arena that a fraction sized too small for RMM or too large for the free memory is bad input
  // (exit 2); RMM's default arena (half the free memory) too small or not fitting, or any other CUDA error
  // (a driver older than RMM's runtime), is the environment (exit 3). Either way the message names the
  // allocator and what RMM said.
  DeviceResource first_resource() {
    const std::string setting =
        config_fraction_ ? fmt::format(" {} per_process_memory_fraction:{}", flags_.conf, *config_fraction_)
                         : "";
    try {
      DeviceResource resource = make_resource();
      if (kind_ == RmmResource::arena && !limit_) {  // RMM chose it: every rebuild takes the same size
        arena_size_ = static_cast<std::size_t>(upstream_->current_and_peak().first);
      }
      return resource;
    } catch (const rmm::logic_error& e) {
      const std::string what =
          fmt::format("{} {}{}: RMM refuses the resource: {}", flags_.name, name(), setting, e.what());
      if (limit_) {
        throw InputError(what);
      }
      throw EnvironmentError(what);
    } catch (const rmm::out_of_memory& e) {
      const MemInfo mem = backend_.mem_info();
      const std::string what =
          fmt::format("{} {}{}: RMM could not take its {} from {} ({} free of {}): {}", flags_.name, name(),
                      setting, limit_ ? format_bytes(*limit_) : std::string("arena (half the free memory)"),
                      backend_.info().label(), format_bytes(mem.free), format_bytes(mem.total), e.what());
      if (limit_) {
        throw InputError(what);
      }
      throw EnvironmentError(what);
    } catch (const std::exception& e) {  // rmm::cuda_error, or rmm::bad_alloc from a CUDA error but OOM
      throw EnvironmentError(fmt::format("{} {}: RMM could not build its resource on {}: {}", flags_.name,
                                         name(), backend_.info().label(), e.what()));
    }
  }

  // Builds the resource, with the device current (RMM's resources belong to the current device).
  DeviceResource make_resource() {
    const cuda::ScopedDevice current(device_);
    switch (kind_) {
      case RmmResource::pool:
        return DeviceResource(
            rmm::mr::pool_memory_resource(DeviceResource(upstream_->resource()), 0, limit_));
      case RmmResource::arena:
        return DeviceResource(rmm::mr::arena_memory_resource(DeviceResource(upstream_->resource()),
                                                             limit_ ? limit_ : arena_size_));
      case RmmResource::async:
        async_.emplace(std::nullopt, release_threshold_);
        return DeviceResource(*async_);
    }
    throw std::logic_error("unknown RMM resource");
  }

  [[nodiscard]] std::int64_t pool_attribute(cudaMemPoolAttr attr) const {
    std::uint64_t value = 0;
    MEMSTRESS_CUDA_TRY(cudaMemPoolGetAttribute(async_->pool_handle(), attr, &value));
    return static_cast<std::int64_t>(value);
  }

  void* do_allocate(std::size_t bytes, StreamRef stream) override {
    if (bytes == 0) {
      return nullptr;
    }
    const cuda::ScopedDevice current(device_);
    try {
      {
        const std::shared_lock lock(resource_mutex_);
        if (resource_) {
          return allocate_from(*resource_, bytes, stream);
        }
      }
      const std::unique_lock lock(resource_mutex_);
      if (!resource_) {  // dropped by empty_cache: built again on demand
        resource_.emplace(make_resource());
      }
      return allocate_from(*resource_, bytes, stream);
    } catch (const rmm::bad_alloc& e) {  // rmm::out_of_memory, or a failed cudaMalloc upstream
      throw out_of_memory(bytes, stream, e.what());
    } catch (const rmm::cuda_error& e) {  // a CUDA error inside RMM: a failure of the run, said as RMM's
      throw Error(ExitCode::check_failed, fmt::format("{}: {} allocating {} bytes: RMM: {}",
                                                      backend_.info().label(), name(), bytes, e.what()));
    }
  }

  // The block is recorded while the caller holds resource_mutex_, so empty_cache never sees it missing.
  void* allocate_from(DeviceResource& resource, std::size_t bytes, StreamRef stream) {
    void* ptr = resource.allocate(::cuda::stream_ref(stream.cuda()), bytes, kAlignment);
    live_.add(ptr, bytes, stream, name());
    return ptr;
  }

  void do_deallocate(void* ptr) override {
    const std::shared_lock lock(resource_mutex_);
    const cuda::ScopedDevice current(device_);
    live_.release(ptr, name(), [&](const LiveBlocks::Block& live) {
      const StreamRef on = live.streams.free_stream(free_stream_.get());
      resource_->deallocate(::cuda::stream_ref(on.cuda()), ptr, live.bytes, kAlignment);
    });
  }

  void do_record_stream(void* ptr, StreamRef stream) override { live_.record(ptr, stream, name()); }

  void do_empty_cache() override {
    const cuda::ScopedDevice current(device_);
    if (async_) {
      MEMSTRESS_CUDA_TRY(cudaDeviceSynchronize());
      MEMSTRESS_CUDA_TRY(cudaMemPoolTrimTo(async_->pool_handle(), 0));
      return;
    }
    const std::unique_lock lock(resource_mutex_);
    if (resource_ && live_.count() == 0) {
      MEMSTRESS_CUDA_TRY(cudaDeviceSynchronize());
      resource_.reset();  // RMM's destructor returns the pool's or arena's memory to cudaFree
    }
  }

  OutOfMemoryError out_of_memory(std::size_t bytes, StreamRef stream, std::string_view rmm_message) {
    const MemInfo mem = backend_.mem_info();
    const MemoryStats stats = memory_stats();
    const std::scoped_lock lock(mutex_);
    ++num_ooms_;
    return OutOfMemoryError(fmt::format(
        "{}: out of memory allocating {} ({} bytes) with {} on stream {:#x}: device {} has {} total, {} "
        "free; this allocator holds {} in {} allocations and reserves {}; RMM says: {}",
        backend_.info().label(), format_bytes(bytes), bytes, name(), stream.id, backend_.info().name,
        format_bytes(mem.total), format_bytes(mem.free),
        format_bytes(static_cast<std::uint64_t>(live_.held().current)), live_.count(),
        format_bytes(static_cast<std::uint64_t>(stats.at("reserved_bytes.all.current"))), rmm_message));
  }

  const RmmResource kind_;
  const AllocatorFlags flags_;  // the command's flags, for the errors
  DeviceBackend& backend_;
  const int device_;
  const std::optional<double> config_fraction_;               // per_process_memory_fraction, as given
  const std::optional<std::size_t> limit_;                    // maximum pool size, arena size
  std::optional<std::size_t> arena_size_;                     // rmm-arena without a fraction: RMM's choice
  const std::optional<std::size_t> release_threshold_;        // rmm-async
  std::optional<UpstreamCount> upstream_;                     // rmm-pool, rmm-arena
  std::optional<rmm::mr::cuda_async_memory_resource> async_;  // rmm-async
  // The resource; none after an empty_cache that found nothing allocated. Calls into it hold the lock
  // shared; empty_cache and a rebuild hold it alone.
  mutable std::shared_mutex resource_mutex_;
  std::optional<DeviceResource> resource_;
  cuda::Stream free_stream_;  // frees of allocations used on several streams
  mutable std::mutex mutex_;
  LiveBlocks live_;
  std::int64_t num_ooms_ = 0;
};

}  // namespace

bool rmm_built() noexcept {
  return true;
}

void require_rmm_built(RmmResource /*resource*/, std::string_view /*what*/) {}

std::unique_ptr<Allocator> make_rmm_allocator(RmmResource resource, DeviceBackend& backend,
                                              const AllocConfig& config, const AllocatorFlags& flags) {
  if (!backend.has_memory()) {
    throw EnvironmentError(fmt::format(
        "the {} allocator needs a real GPU (RMM allocates with the CUDA runtime); running on the simulated "
        "device {}: choose another allocator (e.g. {} caching) or a CUDA device ({} cuda)",
        rmm_peer_name(resource), backend.info().label(), flags.name, flags.device));
  }
  return std::make_unique<RmmAllocator>(resource, backend, config, flags);
}

}  // namespace memstress
