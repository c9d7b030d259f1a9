// StatisticsAllocator: PyTorch-named counters over any upstream (make_statistics_allocator).
//
// Design note. The adaptor sees the seam only: the size a caller asked for, never what the upstream
// rounded it to. So it counts requested sizes, and allocated_bytes.all.* equals requested_bytes.all.*
// here (both are exported because tools read PyTorch's names). Its keys are
// allocated_bytes.all.{current,peak,allocated,freed}, requested_bytes.all.*, allocation.all.* (counts)
// and num_ooms (OutOfMemoryErrors from the upstream). They are merged over the upstream's statistics
// and the adaptor's own key wins where both have one: over a caching peer, allocated_bytes then means
// requested bytes, so wrap a peer that keeps exact counters only to get counters in a uniform sense.
// reset_peak_stats resets the adaptor's peaks and forwards. One mutex guards the counters and the
// pointer -> size map; the upstream is called outside it, and a free is recorded before the upstream
// sees the pointer (another thread may be handed the same address right after).

#include <fmt/format.h>

#include <mutex>
#include <unordered_map>

#include "harness/alloc/adaptor_base.hpp"
#include "harness/alloc/adaptors.hpp"
#include "harness/core/error.hpp"
#include "harness/stats/counter.hpp"

namespace memstress {
namespace {

class StatisticsAllocator final : public detail::AdaptorBase {
 public:
  struct AsPeer {};
  explicit StatisticsAllocator(std::unique_ptr<Allocator> upstream)
      : AdaptorBase("statistics", std::move(upstream)) {}
  StatisticsAllocator(std::unique_ptr<Allocator> peer, AsPeer /*tag*/) : AdaptorBase(std::move(peer)) {}

  [[nodiscard]] MemoryStats memory_stats() const override {
    MemoryStats stats = upstream().memory_stats();
    const std::scoped_lock lock(mutex_);
    requested_.export_to(stats, "allocated_bytes.all");
    requested_.export_to(stats, "requested_bytes.all");
    allocations_.export_to(stats, "allocation.all");
    stats["num_ooms"] = num_ooms_;
    return stats;
  }

  void reset_peak_stats() override {
    {
      const std::scoped_lock lock(mutex_);
      requested_.reset_peak();
      allocations_.reset_peak();
    }
    upstream().reset_peak_stats();
  }

 private:
  void* do_allocate(std::size_t bytes, StreamRef stream) override {
    void* ptr = nullptr;
    try {
      ptr = upstream().allocate(bytes, stream);
    } catch (const OutOfMemoryError&) {
      const std::scoped_lock lock(mutex_);
      ++num_ooms_;
      throw;
    }
    if (ptr == nullptr) {  // 0 bytes: not an allocation
      return nullptr;
    }
    const std::scoped_lock lock(mutex_);
    live_.emplace(ptr, bytes);
    requested_.add(static_cast<std::int64_t>(bytes));
    allocations_.add(1);
    return ptr;
  }

  void do_deallocate(void* ptr) override {
    {
      const std::scoped_lock lock(mutex_);
      const auto it = live_.find(ptr);
      if (it == live_.end()) {
        throw InputError(fmt::format("{}: deallocate of {} which it did not allocate", name(), ptr));
      }
      requested_.sub(static_cast<std::int64_t>(it->second));
      allocations_.sub(1);
      live_.erase(it);
    }
    upstream().deallocate(ptr);
  }

  mutable std::mutex mutex_;
  std::unordered_map<void*, std::size_t> live_;
  StatCounter requested_;
  StatCounter allocations_;
  std::int64_t num_ooms_ = 0;
};

}  // namespace

std::unique_ptr<Allocator> make_statistics_allocator(std::unique_ptr<Allocator> upstream) {
  return std::make_unique<StatisticsAllocator>(std::move(upstream));
}

std::unique_ptr<Allocator> make_peer_statistics(std::unique_ptr<Allocator> peer) {
  return std::make_unique<StatisticsAllocator>(std::move(peer), StatisticsAllocator::AsPeer{});
}

}  // namespace memstress
