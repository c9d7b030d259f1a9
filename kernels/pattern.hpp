#pragma once

// Fill a device buffer with a verifiable pattern and count mismatches on the device. The mismatch
// count comes back through pinned host memory; the host never reads the buffer itself.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "harness/core/planted_faults.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "kernels/pattern_word.hpp"

namespace memstress::kernels {

std::string_view to_string(Pattern pattern) noexcept;
// Throws InputError naming `what` for an unknown name.
Pattern parse_pattern(std::string_view name, std::string_view what);
std::span<const Pattern> all_patterns() noexcept;

// Enqueues a fill of `bytes` at `dst` on `stream`.
void fill(void* dst, std::size_t bytes, Pattern pattern, std::uint64_t seed, cudaStream_t stream);

struct CheckResult {
  static constexpr std::uint64_t kNone = ~0ULL;
  std::uint64_t checked_words = 0;       // 8-byte words compared (a partial tail word counts as one)
  std::uint64_t bad_words = 0;           // words that differ from the pattern
  std::uint64_t first_bad_word = kNone;  // lowest index of a bad word
  [[nodiscard]] bool ok() const noexcept { return bad_words == 0; }
};

// Owns the device counters and the pinned result slot for one check at a time (per stream).
class Checker {
 public:
  // `planted`: in a fault-hook build, the faults MEMSTRESS_PLANT_FAULT asks for are planted in what this
  // checker checks (Note [Planted faults]; the integrity test's checker); never in other builds.
  explicit Checker(bool planted = false);
  // Enqueues a comparison of `bytes` at `src` with the pattern on `stream`. When given, `kernel_start` and
  // `kernel_stop` are recorded around the comparison kernel alone (not the counter reset and copy-back),
  // so that its bandwidth can be timed.
  void enqueue(const void* src, std::size_t bytes, Pattern pattern, std::uint64_t seed, cudaStream_t stream,
               cudaEvent_t kernel_start = nullptr, cudaEvent_t kernel_stop = nullptr);
  // Waits for the stream the last enqueue used and returns its result.
  [[nodiscard]] CheckResult wait();
  // enqueue + wait.
  CheckResult check(const void* src, std::size_t bytes, Pattern pattern, std::uint64_t seed,
                    cudaStream_t stream);
  // Both passes of moving inversions over a buffer holding the pattern (fill first): compare with the
  // pattern and write its complement going up, then compare with the complement and write the pattern
  // going down; the buffer holds the pattern again after (what should be there is written, so a bad read
  // is counted once, and a cell that cannot hold a value in each pass). Returns the words that differed,
  // once per pass (checked_words counts both passes). A planted stuck bit is set again before each pass.
  // `bytes` must be a multiple of 8 (InputError otherwise).
  CheckResult invert(void* buffer, std::size_t bytes, Pattern pattern, std::uint64_t seed,
                     cudaStream_t stream);

 private:
  void plant_stuck(const void* src, std::size_t bytes, cudaStream_t stream);
  // Flips each planted flip bit unless the checker has had its bad read; whether it flipped any.
  bool flip_planted(const void* src, std::size_t bytes, cudaStream_t stream);
  void plant_before(const void* src, std::size_t bytes, cudaStream_t stream);
  void plant_after(const void* src, std::size_t bytes, cudaStream_t stream);
  // Copies the counters back on `stream` for wait(), which will report `checked_words`.
  void copy_back(cudaStream_t stream, std::uint64_t checked_words);

  cuda::DeviceBuffer counters_;  // {bad_words, first_bad_word}
  cuda::PinnedBuffer result_;    // the same, copied back
  cudaStream_t stream_ = nullptr;
  std::uint64_t checked_words_ = 0;
  std::vector<BitFault> planted_;  // test-only builds (Note [Planted faults]); empty otherwise
  bool flipped_ = false;           // a flip fault has had its one bad read
};

// Many checks, on any streams, summed into one result: for workloads with more checks in flight than a
// Checker's one slot allows. Enqueues never block; collect() reads the sums once every stream that ran a
// check has been synchronized by the caller, and starts a new tally. first_bad_word is the lowest bad word
// index over all checked buffers, so it only locates an error when one buffer was checked.
class CheckTally {
 public:
  CheckTally();
  void enqueue(const void* src, std::size_t bytes, Pattern pattern, std::uint64_t seed, cudaStream_t stream);
  // Counts the 8-byte words in which `a` and `b` differ (bit-exact comparison of two results).
  void enqueue_compare(const void* a, const void* b, std::size_t bytes, cudaStream_t stream);
  [[nodiscard]] CheckResult collect();

 private:
  cuda::DeviceBuffer counters_;  // {bad_words, first_bad_word}
  std::uint64_t checked_words_ = 0;
};

// Keeps the stream busy for `nanoseconds` (by the GPU's global timer) so that host launch overhead stays
// out of a timed region enqueued behind it.
void spin(std::uint64_t nanoseconds, cudaStream_t stream);

}  // namespace memstress::kernels
