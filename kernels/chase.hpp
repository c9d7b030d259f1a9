#pragma once

// A pointer chase for memory latency (over a peer mapping, for p2p): a region holds a chain of `slots`
// 8-byte pointers, one per kChaseStride bytes, each slot pointing at the next one in a full-cycle
// pseudo-random order (so neither caches of lines nor prefetchers help); one thread follows it, each load
// waiting for the one before. Latency = time / hops.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/pattern_word.hpp"  // MEMSTRESS_HD

namespace memstress::kernels {

inline constexpr std::uint64_t kChaseStride = 256;  // bytes between slots: two 128-byte lines apart

// The slot after `k` of `slots` (a power of two): an LCG of full period (odd increment, multiplier 1 mod 4).
MEMSTRESS_HD constexpr std::uint64_t chase_next(std::uint64_t k, std::uint64_t slots) noexcept {
  return (k * 2862933555777941757ULL + 3037000493ULL) & (slots - 1);
}

// The slot reached from slot 0 after `hops` steps (the host's expectation of chase()).
constexpr std::uint64_t chase_slot_after(std::uint64_t hops, std::uint64_t slots) noexcept {
  std::uint64_t k = 0;
  for (std::uint64_t i = 0; i < hops; ++i) {
    k = chase_next(k, slots);
  }
  return k;
}

// The largest power-of-two slot count that fits `bytes` (at least 1; 0 when bytes < kChaseStride).
constexpr std::uint64_t chase_slots(std::uint64_t bytes) noexcept {
  std::uint64_t slots = 1;
  while (slots * 2 * kChaseStride <= bytes) {
    slots *= 2;
  }
  return bytes < kChaseStride ? 0 : slots;
}

// Enqueues the chain's construction in `region` (on the device that owns it; slots a power of two).
void chase_init(void* region, std::uint64_t slots, cudaStream_t stream);
// Enqueues one thread following the chain from slot 0 for `hops` loads; the address it ends at goes to
// `*end` (device memory of the device running the chase).
void chase(const void* region, std::uint64_t hops, std::uint64_t* end, cudaStream_t stream);

namespace detail {
cudaError_t launch_chase_init(void* region, std::uint64_t slots, unsigned grid, cudaStream_t stream);
cudaError_t launch_chase(const void* region, std::uint64_t hops, std::uint64_t* end, cudaStream_t stream);
}  // namespace detail

}  // namespace memstress::kernels
