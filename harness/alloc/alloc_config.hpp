#pragma once

// The caching allocator's settings, in PyTorch's PYTORCH_CUDA_ALLOC_CONF syntax so that users can paste
// what they already run with: "max_split_size_mb:128,roundup_power2_divisions:[256:1,>:4],
// garbage_collection_threshold:0.8,expandable_segments:True". memstress adds two keys of its own:
// per_process_memory_fraction:F (PyTorch sets it through torch.cuda.set_per_process_memory_fraction) and
// release_threshold_mb:N (the async peer's pool release threshold).
// Keys PyTorch accepts but memstress has nothing to do with (release_lock_on_cudamalloc, pinned_*,
// backend) are accepted and recorded, so a user's real string parses.

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memstress {

struct AllocConfig {
  static constexpr std::size_t kRoundupIntervals = 16;  // [2^i MiB, 2^(i+1) MiB), i = 0..15
  static constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();

  std::uint64_t max_split_size = kUnlimited;
  std::uint64_t max_non_split_rounding = 20ULL << 20;
  std::array<std::uint32_t, kRoundupIntervals> roundup_power2_divisions{};  // 0 or 1: off
  double garbage_collection_threshold = 0.0;
  bool expandable_segments = false;
  std::optional<double> memory_fraction;           // per_process_memory_fraction (memstress)
  std::optional<std::uint64_t> release_threshold;  // release_threshold_mb, for the async peer (memstress)
  std::string backend;  // PyTorch's backend key: "native", "cudaMallocAsync"; "": none
  std::string text;     // as given (canonical form of the keys)
  // Each key:value as given, in order, spaces left out: "roundup_power2_divisions:[256:1,>:4]" is one (the
  // grammar's parts, for whoever names or counts a setting's keys: a comma inside brackets parts none).
  std::vector<std::string> parts;

  // Throws InputError naming `what` (e.g. "--alloc-conf") and the offending key.
  static AllocConfig parse(std::string_view text, std::string_view what);
  // PyTorch's divisions lookup for a (rounded) size.
  [[nodiscard]] std::uint32_t divisions_for(std::uint64_t size) const noexcept;
};

}  // namespace memstress
