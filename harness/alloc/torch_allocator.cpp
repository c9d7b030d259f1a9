#include "harness/alloc/torch_allocator.hpp"

// No fmt here: torch/include carries its own fmt, which would shadow the system's (cmake/FindTorchC10.cmake).
#include <c10/cuda/CUDACachingAllocator.h>

#include <array>
#include <string>

#include "harness/core/error.hpp"
#include "harness/memory/backend.hpp"
#include "harness/memory/cuda_handles.hpp"

namespace memstress {
namespace {

class TorchAllocator final : public Allocator {
 public:
  explicit TorchAllocator(DeviceBackend& backend) : backend_(backend), device_(backend.info().ordinal) {
    if (!backend.has_memory()) {
      throw EnvironmentError("the torch allocator needs a real GPU; running on the simulated device " +
                             backend.info().label());
    }
    const cuda::ScopedDevice scoped(device_);
    c10::cuda::CUDACachingAllocator::init(cuda::device_count());
  }
  ~TorchAllocator() override {
    try {
      c10::cuda::CUDACachingAllocator::emptyCache();
    } catch (...) {  // NOLINT(bugprone-empty-catch): nothing to do at teardown
    }
  }
  TorchAllocator(const TorchAllocator&) = delete;
  TorchAllocator& operator=(const TorchAllocator&) = delete;
  TorchAllocator(TorchAllocator&&) = delete;
  TorchAllocator& operator=(TorchAllocator&&) = delete;

  [[nodiscard]] std::string_view name() const noexcept override { return "torch"; }
  [[nodiscard]] DeviceBackend& backend() const noexcept override { return backend_; }

  [[nodiscard]] MemoryStats memory_stats() const override {
    const auto stats =
        c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device_));
    MemoryStats out;
    const auto put = [&](const std::string& name, const auto& array) {
      static constexpr std::array<const char*, 3> kTypes{"all", "small_pool", "large_pool"};
      for (std::size_t i = 0; i < kTypes.size(); ++i) {
        const std::string prefix = name + "." + kTypes[i];
        out[prefix + ".current"] = array[i].current;
        out[prefix + ".peak"] = array[i].peak;
        out[prefix + ".allocated"] = array[i].allocated;
        out[prefix + ".freed"] = array[i].freed;
      }
    };
    put("allocation", stats.allocation);
    put("segment", stats.segment);
    put("active", stats.active);
    put("inactive_split", stats.inactive_split);
    put("allocated_bytes", stats.allocated_bytes);
    put("reserved_bytes", stats.reserved_bytes);
    put("active_bytes", stats.active_bytes);
    put("inactive_split_bytes", stats.inactive_split_bytes);
    put("requested_bytes", stats.requested_bytes);
    out["num_alloc_retries"] = stats.num_alloc_retries;
    out["num_ooms"] = stats.num_ooms;
    out["num_device_alloc"] = stats.num_device_alloc;
    out["num_device_free"] = stats.num_device_free;
    return out;
  }
  void reset_peak_stats() override {
    c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device_));
  }

 private:
  void* do_allocate(std::size_t bytes, StreamRef stream) override {
    const cuda::ScopedDevice scoped(device_);
    try {
      return c10::cuda::CUDACachingAllocator::raw_alloc_with_stream(bytes, stream.cuda());
    } catch (const c10::OutOfMemoryError& e) {
      throw OutOfMemoryError(std::string("torch allocator: ") + e.what_without_backtrace());
    }
  }
  void do_deallocate(void* ptr) override { c10::cuda::CUDACachingAllocator::raw_delete(ptr); }
  void do_empty_cache() override { c10::cuda::CUDACachingAllocator::emptyCache(); }

  DeviceBackend& backend_;
  int device_;
};

}  // namespace

std::unique_ptr<Allocator> make_torch_allocator(DeviceBackend& backend) {
  return std::make_unique<TorchAllocator>(backend);
}

}  // namespace memstress
