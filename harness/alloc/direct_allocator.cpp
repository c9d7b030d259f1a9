#include "harness/alloc/direct_allocator.hpp"

#include <fmt/format.h>

#include "harness/core/error.hpp"
#include "harness/core/units.hpp"
#include "harness/memory/backend.hpp"

namespace memstress {

DirectAllocator::~DirectAllocator() {
  for (const auto& [ptr, bytes] : live_) {
    backend_.release(ptr, bytes);
  }
}

void* DirectAllocator::do_allocate(std::size_t bytes, StreamRef /*stream*/) {
  void* ptr = backend_.try_reserve(bytes);
  const std::scoped_lock lock(mutex_);
  if (ptr == nullptr) {
    ++num_ooms_;
    const MemInfo mem = backend_.mem_info();
    throw OutOfMemoryError(fmt::format(
        "{}: out of memory allocating {} ({} bytes) with the direct allocator: device {} has {} total, {} "
        "free; "
        "this process holds {} in {} allocations",
        backend_.info().label(), format_bytes(bytes), bytes, backend_.info().name, format_bytes(mem.total),
        format_bytes(mem.free), format_bytes(static_cast<std::uint64_t>(allocated_.current)), live_.size()));
  }
  live_.emplace(ptr, bytes);
  allocated_.add(static_cast<std::int64_t>(bytes));
  ++num_device_alloc_;
  return ptr;
}

void DirectAllocator::do_deallocate(void* ptr) {
  std::size_t bytes = 0;
  {
    const std::scoped_lock lock(mutex_);
    const auto it = live_.find(ptr);
    if (it == live_.end()) {
      throw InputError(fmt::format("direct allocator: deallocate of {} which it did not allocate", ptr));
    }
    bytes = it->second;
    live_.erase(it);
    allocated_.sub(static_cast<std::int64_t>(bytes));
    ++num_device_free_;
  }
  backend_.release(ptr, bytes);
}

MemoryStats DirectAllocator::memory_stats() const {
  const std::scoped_lock lock(mutex_);
  MemoryStats stats;
  allocated_.export_to(stats, "allocated_bytes.all");
  allocated_.export_to(stats, "reserved_bytes.all");  // nothing is cached: reserved is allocated
  stats["num_ooms"] = num_ooms_;
  stats["num_device_alloc"] = num_device_alloc_;
  stats["num_device_free"] = num_device_free_;
  return stats;
}

void DirectAllocator::reset_peak_stats() {
  const std::scoped_lock lock(mutex_);
  allocated_.reset_peak();
}

}  // namespace memstress
