// LimitingAllocator: a byte cap on what is allocated through it (make_limiting_allocator).
//
// Design note. The cap counts requested sizes of live allocations, not what the upstream reserves or
// rounds to, so it means the same over every peer: "a workload may hold at most N bytes". A request is
// admitted when current + bytes <= limit (exactly at the cap is fine). Admission and the bookkeeping
// are under one mutex, but the upstream call is made outside it: the bytes are charged first and
// given back if the upstream throws, so concurrent requests can never overshoot the cap together and
// threads do not serialize on the upstream. A free is uncharged (and its pointer forgotten) before the
// upstream sees it, because once the upstream has it another thread may be handed the same address.
//
// Statistics: the upstream's, plus limit_bytes, limit_allocated_bytes.all.{current,peak} and
// limit_num_ooms (refusals by the cap). num_ooms is the upstream's plus the cap's refusals, so it
// counts every OutOfMemoryError a caller of this allocator saw.

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "harness/alloc/adaptor_base.hpp"
#include "harness/alloc/adaptors.hpp"
#include "harness/core/error.hpp"
#include "harness/core/units.hpp"
#include "harness/memory/backend.hpp"

namespace memstress {
namespace {

class LimitingAllocator final : public detail::AdaptorBase {
 public:
  LimitingAllocator(std::unique_ptr<Allocator> upstream, std::uint64_t limit)
      : AdaptorBase("limiting", std::move(upstream)), limit_(limit) {}

  [[nodiscard]] MemoryStats memory_stats() const override {
    MemoryStats stats = upstream().memory_stats();
    const std::scoped_lock lock(mutex_);
    stats["limit_bytes"] = static_cast<std::int64_t>(limit_);
    stats["limit_allocated_bytes.all.current"] = static_cast<std::int64_t>(current_);
    stats["limit_allocated_bytes.all.peak"] = static_cast<std::int64_t>(peak_);
    stats["limit_num_ooms"] = num_ooms_;
    stats["num_ooms"] += num_ooms_;
    return stats;
  }

  void reset_peak_stats() override {
    {
      const std::scoped_lock lock(mutex_);
      peak_ = current_;
    }
    upstream().reset_peak_stats();
  }

 private:
  void* do_allocate(std::size_t bytes, StreamRef stream) override {
    charge(bytes);
    void* ptr = nullptr;
    try {
      ptr = upstream().allocate(bytes, stream);
    } catch (...) {
      uncharge(bytes);
      throw;
    }
    if (ptr == nullptr) {  // 0 bytes
      uncharge(bytes);
      return nullptr;
    }
    const std::scoped_lock lock(mutex_);
    live_.emplace(ptr, bytes);
    peak_ = std::max(peak_, current_);  // here, so a request the upstream refused is never a peak
    return ptr;
  }

  void do_deallocate(void* ptr) override {
    std::size_t bytes = 0;
    {
      const std::scoped_lock lock(mutex_);
      const auto it = live_.find(ptr);
      if (it == live_.end()) {
        throw InputError(fmt::format("{}: deallocate of {} which it did not allocate", name(), ptr));
      }
      bytes = it->second;
      live_.erase(it);
      current_ -= bytes;
    }
    upstream().deallocate(ptr);
  }

  void charge(std::uint64_t bytes) {
    const std::scoped_lock lock(mutex_);
    if (bytes > limit_ - current_) {  // current_ <= limit_ always, so this cannot wrap
      ++num_ooms_;
      throw OutOfMemoryError(fmt::format(
          "{}: out of memory allocating {} ({} bytes) through {}: that would pass its limit of {} ({} "
          "bytes); {} ({} bytes) is allocated through it in {} allocations, {} ({} bytes) is left under "
          "the limit",
          backend().info().label(), format_bytes(bytes), bytes, name(), format_bytes(limit_), limit_,
          format_bytes(current_), current_, live_.size(), format_bytes(limit_ - current_),
          limit_ - current_));
    }
    current_ += bytes;
  }

  void uncharge(std::uint64_t bytes) noexcept {
    const std::scoped_lock lock(mutex_);
    current_ -= bytes;
  }

  const std::uint64_t limit_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, std::size_t> live_;
  std::uint64_t current_ = 0;
  std::uint64_t peak_ = 0;
  std::int64_t num_ooms_ = 0;
};

}  // namespace

std::unique_ptr<Allocator> make_limiting_allocator(std::unique_ptr<Allocator> upstream,
                                                   std::uint64_t limit_bytes) {
  return std::make_unique<LimitingAllocator>(std::move(upstream), limit_bytes);
}

}  // namespace memstress
