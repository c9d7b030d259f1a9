#pragma once

// PyTorch's sizing rules (c10/cuda/CUDACachingAllocator.cpp), the basis of trace-replay fidelity:
//   every request is rounded to 512 B (or to a fraction of its power of two: roundup_power2_divisions);
//   rounded sizes up to 1 MiB come from the small pool, whose segments are 2 MiB; larger ones from the
//   large pool, whose segments are 20 MiB for requests under 10 MiB and the request rounded to 2 MiB
//   above that.

#include <cstdint>

#include "harness/alloc/alloc_config.hpp"

namespace memstress::caching {

inline constexpr std::uint64_t kMinBlockSize = 512;
inline constexpr std::uint64_t kSmallSize = 1ULL << 20;
inline constexpr std::uint64_t kSmallBuffer = 2ULL << 20;
inline constexpr std::uint64_t kLargeBuffer = 20ULL << 20;
inline constexpr std::uint64_t kMinLargeAlloc = 10ULL << 20;
inline constexpr std::uint64_t kRoundLarge = 2ULL << 20;

enum class PoolKind : std::uint8_t { small = 0, large = 1 };

// The next multiple of size's power of two divided into `divisions` equal steps.
std::uint64_t roundup_power2_next_division(std::uint64_t size, std::uint32_t divisions) noexcept;
std::uint64_t round_size(std::uint64_t bytes, const AllocConfig& config) noexcept;
constexpr PoolKind pool_for(std::uint64_t rounded) noexcept {
  return rounded <= kSmallSize ? PoolKind::small : PoolKind::large;
}
// The size of a new segment for a rounded request.
constexpr std::uint64_t allocation_size(std::uint64_t rounded) noexcept {
  if (rounded <= kSmallSize) {
    return kSmallBuffer;
  }
  if (rounded < kMinLargeAlloc) {
    return kLargeBuffer;
  }
  return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

}  // namespace memstress::caching
