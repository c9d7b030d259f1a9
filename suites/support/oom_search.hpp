#pragma once

// OOM thresholds, shared by the `oom` and `fragmentation` workloads.
//
// Design. Every search probes the shared allocator and treats OutOfMemoryError as an answer, never as a
// failure: SearchLog counts probes and refusals and keeps the first refusal's message (PyTorch-style, with
// the largest free block) for the case's notes. Two searches:
//   - largest_allocatable: the largest single allocation, as a multiple of a step up to a limit (the
//     device's free memory plus what the allocator caches: no allocation can be larger). The search
//     starts at the device's free memory after empty_cache() (largest_from): the answer nearly always
//     lies a few steps under it, so a handful of probes find it where bisection from 0 took
//     log2(limit / step), about 16 allocations of nearly the whole GPU. Those are what cost: the driver
//     serves one such allocation at a time across processes, so with a rank per GPU the ranks' probes
//     queue behind each other.
//     Each probe is freed at once and followed by empty_cache(), so a probe's cached segment never stands
//     in the next probe's way and the cache never holds the device between probes.
//   - max_fitting: the largest batch size, found the way users find it: start from a batch that surely
//     fails, halve until one fits, then bisect between the last failure and that fit.
// Both assume the answer is monotone (whatever fits, anything smaller fits too), which holds for every
// allocator here above a few MiB; below that the caching allocator's 20 MiB segments for requests under
// 10 MiB can make a smaller request fail where a larger one fits, which no search of this kind resolves.
//
// BatchProfile is the model the batch search fits: parameters allocated once, then per batch six
// activation tensors (batch x per_sample x 1/2, 1/4, 1/8, 1/16, 1/32, 1/32: they sum to per_sample per
// sample) and a workspace. fragment() is the fragmenting pattern the `fragmented` state runs first.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "harness/alloc/allocator.hpp"
#include "harness/core/error.hpp"

namespace memstress::suites {

class LiveBlocks;

struct SearchLog {
  static constexpr std::size_t kMessageChars = 300;

  std::uint64_t probes = 0;  // allocations (or batches) tried
  std::uint64_t ooms = 0;    // of those, refused for lack of memory
  std::string first_oom;     // the first refusal's message, truncated to kMessageChars

  void refused(const OutOfMemoryError& e);
};

// The device's free memory plus what the allocator caches (reserved - allocated): no single allocation
// can be larger. Under a cap (--alloc-limit: the limit_bytes statistic), at most what is left under it.
std::uint64_t allocatable_bound(const Allocator& allocator);

// The device's capacity as the allocator sees it: the cap (limit_bytes) where that is smaller.
std::uint64_t allocator_capacity(const Allocator& allocator);

// The largest n in [0, top] with fits(n) (fits(0) is taken as true and never asked), for a monotone
// fits: from `hint` up (if it fits) or down by 1, 2, 4, ... until the answer is bracketed, then bisection.
// About 2 log2(distance from the hint) questions; at most about 2 log2(top).
std::uint64_t largest_from(std::uint64_t hint, std::uint64_t top,
                           const std::function<bool(std::uint64_t)>& fits);

// The largest multiple of `step` in [0, limit] that `allocator` hands out as one block.
std::uint64_t largest_allocatable(Allocator& allocator, std::uint64_t limit, std::uint64_t step,
                                  SearchLog& log);

// The largest n >= 0 with fits(n) (fits(0) is taken as true and never asked), starting from `start`
// (> 0, meant to fail): halve until fits, then bisect. When `start` fits, doubles until a failure.
std::uint64_t max_fitting(std::uint64_t start, const std::function<bool(std::uint64_t)>& fits);

struct BatchProfile {
  std::uint64_t params = 0;              // bytes, allocated once
  std::uint64_t per_sample = 0;          // activation bytes per sample
  std::uint64_t workspace = 0;           // bytes, allocated after the activations
  std::vector<std::string> adjustments;  // what was scaled down to fit the device, for the notes

  // The device-fitted profile: params = params_frac x capacity; per_sample and workspace are scaled down
  // (and say so in adjustments) where the device could not fit a batch of 8 beside the parameters.
  static BatchProfile fit(std::uint64_t capacity, double params_frac, std::uint64_t per_sample,
                          std::uint64_t workspace);

  // What one batch allocates, in order: the six activation tensors, then the workspace.
  [[nodiscard]] std::vector<std::uint64_t> batch_sizes(std::uint64_t batch) const;
};

// Allocates a batch into `blocks` (which the caller frees); false when one tensor was refused.
bool try_batch(LiveBlocks& blocks, const BatchProfile& profile, std::uint64_t batch, SearchLog& log);

// The fragmenting pattern: over about `bytes`, small (2 MiB) and mid (8 MiB) blocks interleaved, so that
// the caching allocator packs s, m, s, m into each 20 MiB segment; then every mid block is freed and the
// small ones stay live in `blocks`. A fifth of the span stays live, none of it can be released, and no
// free piece is larger than 8 MiB. Returns the bytes left live.
std::uint64_t fragment(LiveBlocks& blocks, std::uint64_t bytes);

}  // namespace memstress::suites
