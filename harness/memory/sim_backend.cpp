#include "harness/memory/sim_backend.hpp"

#include <fmt/format.h>

#include "harness/core/error.hpp"
#include "harness/core/units.hpp"

namespace memstress {
namespace {

std::uint64_t round_up(std::uint64_t value, std::uint64_t multiple) noexcept {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace

SimBackend::SimBackend(std::uint64_t capacity) {
  if (capacity == 0) {
    throw InputError("--device sim:CAPACITY: the capacity must be more than 0 bytes");
  }
  info_.kind = BackendKind::sim;
  info_.ordinal = 0;
  info_.name = fmt::format("simulated ({})", format_bytes(capacity));
  info_.capacity = capacity;
  free_.emplace(kBaseAddress, round_up(capacity, kPageBytes) * 4);
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
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < charge) {
      continue;
    }
    const std::uint64_t start = it->first;
    const std::uint64_t rest = it->second - charge;
    free_.erase(it);
    if (rest != 0) {
      free_.emplace(start + charge, rest);
    }
    live_.emplace(start, charge);
    used_ += charge;
    return reinterpret_cast<void*>(start);  // NOLINT(performance-no-int-to-ptr): never dereferenced
  }
  return nullptr;
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
  std::uint64_t begin = start;
  std::uint64_t length = live->second;
  used_ -= length;
  live_.erase(live);
  // Coalesce with the free neighbours on both sides.
  auto next = free_.lower_bound(begin);
  if (next != free_.end() && begin + length == next->first) {
    length += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    const auto prev = std::prev(next);
    if (prev->first + prev->second == begin) {
      begin = prev->first;
      length += prev->second;
      free_.erase(prev);
    }
  }
  free_.emplace(begin, length);
}

}  // namespace memstress
