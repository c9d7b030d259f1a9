#include "suites/support/oom_search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>

#include "harness/core/units.hpp"
#include "harness/memory/backend.hpp"
#include "suites/support/live_blocks.hpp"

namespace memstress::suites {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;
// Activation tensors per batch, as divisors of per_sample: 1/2 + 1/4 + 1/8 + 1/16 + 1/32 + 1/32 = 1.
constexpr std::array<std::uint64_t, 6> kActivationShares{2, 4, 8, 16, 32, 32};
constexpr std::uint64_t kPerSampleQuantum = 32ULL * 512;  // keeps every share a whole number of 512 B
constexpr std::uint64_t kMinBatchOnDevice = 8;            // the profile is scaled so this many fit
constexpr double kMaxParamsFrac = 0.9;
// fragment(): the caching allocator packs small, mid, small, mid into one 20 MiB segment.
constexpr std::uint64_t kFragSmall = 2 * kMiB;
constexpr std::uint64_t kFragMid = 8 * kMiB;
constexpr std::uint64_t kFragGroup = 2 * (kFragSmall + kFragMid);

std::int64_t stat(const MemoryStats& stats, const char* key) {
  const auto it = stats.find(key);
  return it == stats.end() ? 0 : it->second;
}

// One probe of `bytes`: allocated and freed at once, then the cache emptied.
bool probe(Allocator& allocator, std::uint64_t bytes, SearchLog& log) {
  ++log.probes;
  void* p = nullptr;
  try {
    p = allocator.allocate(bytes);
  } catch (const OutOfMemoryError& e) {
    log.refused(e);
    allocator.empty_cache();
    return false;
  }
  allocator.deallocate(p);
  allocator.empty_cache();
  return true;
}

std::uint64_t round_down(std::uint64_t value, std::uint64_t quantum) noexcept {
  return value / quantum * quantum;
}

}  // namespace

void SearchLog::refused(const OutOfMemoryError& e) {
  ++ooms;
  if (first_oom.empty()) {
    const std::string_view what = e.what();
    first_oom = what.size() <= kMessageChars ? std::string(what)
                                             : fmt::format("{}...", what.substr(0, kMessageChars));
  }
}

std::uint64_t allocatable_bound(const Allocator& allocator) {
  const MemoryStats stats = allocator.memory_stats();
  const std::int64_t cached =
      stat(stats, "reserved_bytes.all.current") - stat(stats, "allocated_bytes.all.current");
  const std::uint64_t bound =
      allocator.backend().mem_info().free + static_cast<std::uint64_t>(std::max<std::int64_t>(cached, 0));
  if (stats.find("limit_bytes") == stats.end()) {
    return bound;
  }
  const std::int64_t left = stat(stats, "limit_bytes") - stat(stats, "limit_allocated_bytes.all.current");
  return std::min(bound, static_cast<std::uint64_t>(std::max<std::int64_t>(left, 0)));
}

std::uint64_t allocator_capacity(const Allocator& allocator) {
  const std::uint64_t capacity = allocator.backend().info().capacity;
  const MemoryStats stats = allocator.memory_stats();
  const auto limit = stats.find("limit_bytes");
  return limit == stats.end()
             ? capacity
             : std::min(capacity, static_cast<std::uint64_t>(std::max<std::int64_t>(limit->second, 0)));
}

std::uint64_t largest_from(std::uint64_t hint, std::uint64_t top,
                           const std::function<bool(std::uint64_t)>& fits) {
  std::uint64_t fit = 0;         // fits (0 trivially)
  std::uint64_t fail = top + 1;  // fails (one past the top: never asked)
  const std::uint64_t first = std::min(hint, top);
  if (first == 0 || fits(first)) {  // up from the hint by 1, 2, 4, ...
    fit = first;
    for (std::uint64_t gap = 1; fit + gap < fail; gap *= 2) {
      if (!fits(fit + gap)) {
        fail = fit + gap;
        break;
      }
      fit += gap;
    }
  } else {  // down from it by 1, 2, 4, ...
    fail = first;
    for (std::uint64_t gap = 1; fail > gap; gap *= 2) {
      if (fits(fail - gap)) {
        fit = fail - gap;
        break;
      }
      fail -= gap;
    }
  }
  while (fail - fit > 1) {
    const std::uint64_t mid = fit + (fail - fit) / 2;
    if (fits(mid)) {
      fit = mid;
    } else {
      fail = mid;
    }
  }
  return fit;
}

std::uint64_t largest_allocatable(Allocator& allocator, std::uint64_t limit, std::uint64_t step,
                                  SearchLog& log) {
  allocator.empty_cache();
  const std::uint64_t free = allocator.backend().mem_info().free;
  return step * largest_from(free / step, limit / step,
                             [&](std::uint64_t n) { return probe(allocator, n * step, log); });
}

std::uint64_t max_fitting(std::uint64_t start, const std::function<bool(std::uint64_t)>& fits) {
  std::uint64_t fit = std::max<std::uint64_t>(start, 1);
  std::uint64_t fail = 0;  // 0: no failure seen yet
  while (fit > 0 && !fits(fit)) {
    fail = fit;
    fit /= 2;
  }
  if (fit == 0) {
    return 0;
  }
  if (fail == 0) {  // the start fitted: double until something fails (or the sizes would overflow)
    constexpr std::uint64_t kLimit = std::numeric_limits<std::uint64_t>::max() / 4;
    while (fail == 0) {
      if (fit > kLimit) {
        return fit;
      }
      if (fits(fit * 2)) {
        fit *= 2;
      } else {
        fail = fit * 2;
      }
    }
  }
  while (fail - fit > 1) {
    const std::uint64_t mid = fit + (fail - fit) / 2;
    if (fits(mid)) {
      fit = mid;
    } else {
      fail = mid;
    }
  }
  return fit;
}

BatchProfile BatchProfile::fit(std::uint64_t capacity, double params_frac, std::uint64_t per_sample,
                               std::uint64_t workspace) {
  BatchProfile p;
  if (params_frac > kMaxParamsFrac) {
    p.adjustments.push_back(fmt::format("params_frac {} lowered to {}", params_frac, kMaxParamsFrac));
    params_frac = kMaxParamsFrac;
  }
  p.params = round_down(static_cast<std::uint64_t>(params_frac * static_cast<double>(capacity)), 512);
  const std::uint64_t room = capacity - p.params;
  p.workspace = workspace;
  if (p.workspace > room / 4) {
    p.workspace = round_down(room / 4, 512);
    p.adjustments.push_back(
        fmt::format("workspace {} lowered to {}", format_bytes(workspace), format_bytes(p.workspace)));
  }
  p.per_sample = round_down(per_sample, kPerSampleQuantum);
  const std::uint64_t for_batch = room - p.workspace;
  if (p.per_sample * kMinBatchOnDevice > for_batch) {
    p.per_sample = round_down(for_batch / kMinBatchOnDevice, kPerSampleQuantum);
  }
  p.per_sample = std::max(p.per_sample, kPerSampleQuantum);
  if (p.per_sample != per_sample) {
    p.adjustments.push_back(
        fmt::format("per_sample {} set to {}", format_bytes(per_sample), format_bytes(p.per_sample)));
  }
  return p;
}

std::vector<std::uint64_t> BatchProfile::batch_sizes(std::uint64_t batch) const {
  std::vector<std::uint64_t> sizes;
  sizes.reserve(kActivationShares.size() + 1);
  for (const std::uint64_t share : kActivationShares) {
    sizes.push_back(batch * (per_sample / share));
  }
  if (workspace > 0) {
    sizes.push_back(workspace);
  }
  return sizes;
}

bool try_batch(LiveBlocks& blocks, const BatchProfile& profile, std::uint64_t batch, SearchLog& log) {
  ++log.probes;
  try {
    for (const std::uint64_t bytes : profile.batch_sizes(batch)) {
      static_cast<void>(blocks.allocate(bytes));
    }
  } catch (const OutOfMemoryError& e) {
    log.refused(e);
    return false;
  }
  return true;
}

std::uint64_t fragment(LiveBlocks& blocks, std::uint64_t bytes) {
  std::vector<LiveBlocks::Id> mids;
  const std::uint64_t groups = bytes / kFragGroup;
  mids.reserve(groups * 2);
  for (std::uint64_t g = 0; g < groups * 2; ++g) {
    static_cast<void>(blocks.allocate(kFragSmall));
    mids.push_back(blocks.allocate(kFragMid));
  }
  for (const LiveBlocks::Id id : mids) {
    blocks.free(id);
  }
  return groups * 2 * kFragSmall;
}

}  // namespace memstress::suites
