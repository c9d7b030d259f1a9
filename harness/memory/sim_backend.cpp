#include "harness/memory/sim_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "harness/core/error.hpp"
#include "harness/core/units.hpp"

namespace memstress {
namespace {

// Saturates: a value within `multiple` of 2^64 rounds to 2^64 - 1, which no device holds (it wrapped to 0,
// and a request of 2^64 - 1 bytes "fitted" in no memory at all).
std::uint64_t round_up(std::uint64_t value, std::uint64_t multiple) noexcept {
  if (value > std::numeric_limits<std::uint64_t>::max() - (multiple - 1)) {
    return std::numeric_limits<std::uint64_t>::max();
  }
  return (value + multiple - 1) / multiple * multiple;
}

// Removes [start, start + length) from the free range that begins at `range_start`, keeping what is left
// on either side.
void carve(std::map<std::uint64_t, std::uint64_t>& free, std::uint64_t range_start, std::uint64_t start,
           std::uint64_t length) {
  const std::uint64_t end = range_start + free.at(range_start);
  free.erase(range_start);
  if (start != range_start) {
    free.emplace(range_start, start - range_start);
  }
  if (start + length != end) {
    free.emplace(start + length, end - start - length);
  }
}

// First fit of `length` bytes aligned to `alignment` in an address-ordered map of free ranges: from the
// bottom (the lowest range that fits, at its start) or from the top (the highest, at its end).
// Returns 0 when nothing fits.
std::uint64_t take_range(std::map<std::uint64_t, std::uint64_t>& free, std::uint64_t length,
                         std::uint64_t alignment, bool from_top = false) {
  const auto take = [&](auto it) {
    const std::uint64_t range_start = it->first;
    const std::uint64_t end = it->first + it->second;
    std::uint64_t start = 0;
    if (from_top) {
      if (length > end - range_start) {
        return std::uint64_t{0};
      }
      start = (end - length) / alignment * alignment;
      if (start < range_start) {
        return std::uint64_t{0};
      }
    } else {
      start = round_up(range_start, alignment);
      if (start > end || length > end - start) {  // not start + length > end: it can wrap
        return std::uint64_t{0};
      }
    }
    carve(free, range_start, start, length);
    return start;
  };
  if (from_top) {
    for (auto it = free.rbegin(); it != free.rend(); ++it) {
      if (const std::uint64_t start = take(it); start != 0) {
        return start;
      }
    }
    return 0;
  }
  for (auto it = free.begin(); it != free.end(); ++it) {
    if (const std::uint64_t start = take(it); start != 0) {
      return start;
    }
  }
  return 0;
}

// Returns [start, start + length) to the free map, coalescing with its neighbours.
void give_range(std::map<std::uint64_t, std::uint64_t>& free, std::uint64_t start, std::uint64_t length) {
  auto next = free.lower_bound(start);
  if (next != free.end() && start + length == next->first) {
    length += next->second;
    next = free.erase(next);
  }
  if (next != free.begin()) {
    const auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      length += prev->second;
      free.erase(prev);
    }
  }
  free.emplace(start, length);
}

// Takes exactly [start, start + length) out of the free map, if it is free.
bool take_exact(std::map<std::uint64_t, std::uint64_t>& free, std::uint64_t start, std::uint64_t length) {
  auto it = free.upper_bound(start);
  if (it == free.begin()) {
    return false;
  }
  --it;
  if (start + length > it->first + it->second) {
    return false;
  }
  carve(free, it->first, start, length);
  return true;
}

void* as_pointer(std::uint64_t address) noexcept {
  return reinterpret_cast<void*>(address);  // NOLINT(performance-no-int-to-ptr): never dereferenced
}

}  // namespace

SimBackend::SimBackend(std::uint64_t capacity, SimAddressOrder order) : order_(order) {
  if (capacity == 0) {
    throw InputError("a simulated device: the capacity must be more than 0 bytes");
  }
  if (capacity > kMaxCapacity) {
    throw InputError(fmt::format("sim:{}: a simulated device holds at most {} ({} bytes)",
                                 format_bytes(capacity), format_bytes(kMaxCapacity), kMaxCapacity));
  }
  info_.kind = BackendKind::sim;
  info_.ordinal = 0;
  info_.name = fmt::format("simulated ({})", format_bytes(capacity));
  info_.capacity = capacity;
  free_.emplace(kBaseAddress, round_up(capacity, kPageBytes) * 4);
  plan_base_ = kBaseAddress + round_up(capacity, kPageBytes) * 4;
  ranges_free_.emplace(kRangeBase, kBaseAddress - kRangeBase);
  ranges_free_.emplace(kHighRangeBase, kHighRangeEnd - kHighRangeBase);  // Note [Simulated address ranges]
}

std::uint64_t SimBackend::charged_bytes(std::uint64_t bytes) noexcept {
  if (bytes == 0) {
    return kSmallGranularity;
  }
  return bytes <= (1ULL << 20) ? round_up(bytes, kSmallGranularity) : round_up(bytes, kPageBytes);
}

MemInfo SimBackend::mem_info() const {
  const std::scoped_lock lock(mutex_);
  return {info_.capacity - used_, info_.capacity};
}

void* SimBackend::try_reserve(std::size_t bytes) {
  const std::uint64_t charge = charged_bytes(bytes);
  const std::scoped_lock lock(mutex_);
  if (charge > info_.capacity - used_) {
    return nullptr;
  }
  if (plan_on_) {
    const PlannedReservation* next = plan_next_ < plan_.size() ? &plan_[plan_next_] : nullptr;
    if (next != nullptr && charged_bytes(next->bytes) == charge &&
        take_exact(plan_free_, plan_base_ + next->offset, charge)) {
      ++plan_next_;
      live_.emplace(plan_base_ + next->offset, charge);
      used_ += charge;
      return as_pointer(plan_base_ + next->offset);
    }
    plan_on_ = false;
  }
  const std::uint64_t start = take_range(free_, charge, charge >= kPageBytes ? kPageBytes : kSmallGranularity,
                                         order_ == SimAddressOrder::cuda_like && charge > kPageBytes);
  if (start == 0) {
    return nullptr;
  }
  live_.emplace(start, charge);
  used_ += charge;
  return as_pointer(start);
}

void SimBackend::follow_placements(std::vector<PlannedReservation> plan) {
  const std::scoped_lock lock(mutex_);
  std::uint64_t span = 0;
  for (const PlannedReservation& p : plan) {
    span = std::max(span, p.offset + charged_bytes(p.bytes));
  }
  plan_ = std::move(plan);
  plan_next_ = 0;
  plan_on_ = !plan_.empty() && span <= kMaxCapacity;  // a plan spread wider than that is not followed
  plan_free_.clear();
  if (plan_on_) {
    plan_free_.emplace(plan_base_, round_up(span, kPageBytes));
  }
}

void SimBackend::release(void* address, std::size_t /*bytes*/) noexcept {
  const auto start = reinterpret_cast<std::uint64_t>(address);
  const std::scoped_lock lock(mutex_);
  const auto live = live_.find(start);
  if (live == live_.end()) {
    std::fprintf(stderr, "memstress: warning: simulated device: release of unknown address %#llx ignored\n",
                 static_cast<unsigned long long>(start));
    return;
  }
  used_ -= live->second;
  give_range(start >= plan_base_ ? plan_free_ : free_, start, live->second);
  live_.erase(live);
}

void SimBackend::synchronize() {
  const std::scoped_lock lock(mutex_);
  for (auto& [handle, event] : events_) {
    event.done = true;
  }
}

EventHandle SimBackend::record_event(StreamRef stream) {
  const std::scoped_lock lock(mutex_);
  const bool held = std::find(held_.begin(), held_.end(), stream) != held_.end();
  const EventHandle handle = next_event_++;
  events_.emplace(handle, SimEvent{stream, !held});
  return handle;
}

bool SimBackend::event_complete(EventHandle event) {
  const std::scoped_lock lock(mutex_);
  const auto it = events_.find(event);
  return it == events_.end() || it->second.done;
}

void SimBackend::synchronize_event(EventHandle event) {
  const std::scoped_lock lock(mutex_);
  if (const auto it = events_.find(event); it != events_.end()) {
    it->second.done = true;  // the host waited for it
  }
}

void SimBackend::release_event(EventHandle event) noexcept {
  const std::scoped_lock lock(mutex_);
  events_.erase(event);
}

void SimBackend::hold_stream(StreamRef stream) {
  const std::scoped_lock lock(mutex_);
  if (std::find(held_.begin(), held_.end(), stream) == held_.end()) {
    held_.push_back(stream);
  }
}

void SimBackend::release_stream(StreamRef stream) {
  const std::scoped_lock lock(mutex_);
  std::erase(held_, stream);
  for (auto& [handle, event] : events_) {
    if (event.stream == stream) {
      event.done = true;
    }
  }
}

std::size_t SimBackend::live_events() const {
  const std::scoped_lock lock(mutex_);
  return events_.size();
}

std::uint64_t SimBackend::mapped_bytes() const {
  const std::scoped_lock lock(mutex_);
  std::uint64_t total = 0;
  for (const auto& [start, length] : mapped_) {
    total += length;
  }
  return total;
}

void* SimBackend::reserve_address_range(std::size_t bytes) {
  const std::uint64_t length = round_up(std::max<std::uint64_t>(bytes, 1), kPageBytes);
  const std::scoped_lock lock(mutex_);
  const std::uint64_t start = take_range(ranges_free_, length, kPageBytes);
  if (start == 0) {
    throw OutOfMemoryError(
        fmt::format("simulated device: no virtual address range of {} left", format_bytes(length)));
  }
  ranges_live_.emplace(start, length);
  return as_pointer(start);
}

void SimBackend::release_address_range(void* address, std::size_t /*bytes*/) noexcept {
  const auto start = reinterpret_cast<std::uint64_t>(address);
  const std::scoped_lock lock(mutex_);
  const auto it = ranges_live_.find(start);
  if (it == ranges_live_.end()) {
    return;
  }
  // Whatever is still mapped inside goes with it.
  for (auto m = mapped_.lower_bound(start); m != mapped_.end() && m->first < start + it->second;) {
    used_ -= m->second;
    m = mapped_.erase(m);
  }
  give_range(ranges_free_, start, it->second);
  ranges_live_.erase(it);
}

bool SimBackend::try_map(void* address, std::size_t bytes) {
  const auto start = reinterpret_cast<std::uint64_t>(address);
  if (start % kPageBytes != 0 || bytes % kPageBytes != 0 || bytes == 0) {
    throw std::logic_error(
        fmt::format("simulated device: map of {:#x}+{} is not in whole pages", start, bytes));
  }
  const std::scoped_lock lock(mutex_);
  const auto next = mapped_.lower_bound(start);
  const bool overlaps = (next != mapped_.end() && next->first < start + bytes) ||
                        (next != mapped_.begin() && std::prev(next)->first + std::prev(next)->second > start);
  if (overlaps) {
    throw std::logic_error(fmt::format("simulated device: {:#x}+{} is already mapped", start, bytes));
  }
  if (bytes > info_.capacity - used_) {
    return false;
  }
  mapped_.emplace(start, bytes);
  used_ += bytes;
  return true;
}

void SimBackend::unmap(void* address, std::size_t bytes) noexcept {
  const auto start = reinterpret_cast<std::uint64_t>(address);
  const std::scoped_lock lock(mutex_);
  for (auto m = mapped_.lower_bound(start); m != mapped_.end() && m->first < start + bytes;) {
    used_ -= m->second;
    m = mapped_.erase(m);
  }
}

}  // namespace memstress
