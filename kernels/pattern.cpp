// Host side of the verifiable-pattern kernels: argument checks, grid sizes, the pinned result slot.

#include "kernels/pattern.hpp"

#include <fmt/format.h>

#include <array>
#include <utility>

#include "harness/core/cuda_check.hpp"
#include "harness/core/error.hpp"
#include "kernels/grid.hpp"
#include "kernels/launch.hpp"

namespace memstress::kernels {
namespace {

constexpr std::array<Pattern, 7> kPatterns{
    Pattern::random,       Pattern::zeros,         Pattern::ones,   Pattern::checkerboard,
    Pattern::walking_ones, Pattern::walking_zeros, Pattern::address};

using detail::grid_for;
using detail::require_alignment;

// counters = {0, ~0}: two memsets keep an enqueue fully asynchronous.
void reset_counters(void* counters, cudaStream_t stream) {
  auto* bytes = static_cast<unsigned char*>(counters);
  MEMSTRESS_CUDA_TRY(cudaMemsetAsync(bytes, 0x00, sizeof(std::uint64_t), stream));
  MEMSTRESS_CUDA_TRY(cudaMemsetAsync(bytes + sizeof(std::uint64_t), 0xFF, sizeof(std::uint64_t), stream));
}

}  // namespace

std::string_view to_string(Pattern pattern) noexcept {
  switch (pattern) {
    case Pattern::random:
      return "random";
    case Pattern::zeros:
      return "zeros";
    case Pattern::ones:
      return "ones";
    case Pattern::checkerboard:
      return "checkerboard";
    case Pattern::walking_ones:
      return "walking_ones";
    case Pattern::walking_zeros:
      return "walking_zeros";
    case Pattern::address:
      return "address";
  }
  return "unknown";
}

Pattern parse_pattern(std::string_view name, std::string_view what) {
  for (const Pattern p : kPatterns) {
    if (to_string(p) == name) {
      return p;
    }
  }
  throw InputError(fmt::format(
      "{}: unknown pattern '{}'; choose random, zeros, ones, checkerboard, walking_ones, walking_zeros or "
      "address",
      what, name));
}

std::span<const Pattern> all_patterns() noexcept {
  return kPatterns;
}

void fill(void* dst, std::size_t bytes, Pattern pattern, std::uint64_t seed, cudaStream_t stream) {
  if (bytes == 0) {
    return;
  }
  require_alignment(dst, "fill");
  MEMSTRESS_CUDA_TRY(detail::launch_fill(dst, bytes, pattern, seed, grid_for(bytes / 16), stream));
}

Checker::Checker(bool planted)
    : counters_(2 * sizeof(std::uint64_t)),
      result_(2 * sizeof(std::uint64_t)),
      planted_(planted ? planted_faults().bits : std::vector<BitFault>{}) {}

// Test-only (Note [Planted faults]): the buffer is the caller's writable memory, which a check only reads,
// so planting writes through a const_cast there and nowhere else.
void Checker::plant_stuck(const void* src, std::size_t bytes, cudaStream_t stream) {
  void* buffer = const_cast<void*>(src);  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  for (const BitFault& f : planted_) {
    if (f.kind == BitFault::Kind::stuck && f.word < bytes / 8) {
      const detail::PlantBit how = f.value ? detail::PlantBit::set : detail::PlantBit::clear;
      MEMSTRESS_CUDA_TRY(detail::launch_plant(buffer, f.word, f.bit, how, stream));
    }
  }
}

bool Checker::flip_planted(const void* src, std::size_t bytes, cudaStream_t stream) {
  void* buffer = const_cast<void*>(src);  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  bool flipped = false;
  for (const BitFault& f : planted_) {
    if (f.kind == BitFault::Kind::flip && !flipped_ && f.word < bytes / 8) {
      MEMSTRESS_CUDA_TRY(detail::launch_plant(buffer, f.word, f.bit, detail::PlantBit::flip, stream));
      flipped = true;
    }
  }
  return flipped;
}

void Checker::plant_before(const void* src, std::size_t bytes, cudaStream_t stream) {
  plant_stuck(src, bytes, stream);
  flip_planted(src, bytes, stream);
}

void Checker::plant_after(const void* src, std::size_t bytes, cudaStream_t stream) {
  // Every flip undone (flipped back) before the checker counts its one bad read as had.
  flipped_ = flip_planted(src, bytes, stream) || flipped_;
}

void Checker::copy_back(cudaStream_t stream, std::uint64_t checked_words) {
  MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(result_.data(), counters_.data(), 2 * sizeof(std::uint64_t),
                                     cudaMemcpyDeviceToHost, stream));
  stream_ = stream;
  checked_words_ = checked_words;
}

void Checker::enqueue(const void* src, std::size_t bytes, Pattern pattern, std::uint64_t seed,
                      cudaStream_t stream, cudaEvent_t kernel_start, cudaEvent_t kernel_stop) {
  require_alignment(src, "check");
  reset_counters(counters_.data(), stream);
  plant_before(src, bytes, stream);  // outside the timed kernel: a fault-hook build's only
  if (kernel_start != nullptr) {
    MEMSTRESS_CUDA_TRY(cudaEventRecord(kernel_start, stream));
  }
  if (bytes != 0) {
    MEMSTRESS_CUDA_TRY(detail::launch_check(src, bytes, pattern, seed,
                                            static_cast<unsigned long long*>(counters_.data()),
                                            grid_for(bytes / 16), stream));
  }
  if (kernel_stop != nullptr) {
    MEMSTRESS_CUDA_TRY(cudaEventRecord(kernel_stop, stream));
  }
  plant_after(src, bytes, stream);
  copy_back(stream, (bytes + 7) / 8);
}

CheckResult Checker::wait() {
  MEMSTRESS_CUDA_TRY(cudaStreamSynchronize(stream_));
  const std::span<const std::uint64_t> out = result_.as<const std::uint64_t>();
  return CheckResult{checked_words_, out[0], out[1]};
}

CheckResult Checker::check(const void* src, std::size_t bytes, Pattern pattern, std::uint64_t seed,
                           cudaStream_t stream) {
  enqueue(src, bytes, pattern, seed, stream);
  return wait();
}

CheckResult Checker::invert(void* buffer, std::size_t bytes, Pattern pattern, std::uint64_t seed,
                            cudaStream_t stream) {
  require_alignment(buffer, "invert");
  if (bytes % 8 != 0) {
    throw InputError(fmt::format("invert: {} bytes is not a whole number of 8-byte words", bytes));
  }
  reset_counters(counters_.data(), stream);
  for (const bool down : {false, true}) {
    plant_stuck(buffer, bytes, stream);  // a stuck cell holds its value whatever each pass wrote
    if (bytes != 0) {
      MEMSTRESS_CUDA_TRY(detail::launch_invert(buffer, bytes, pattern, seed, /*complemented=*/down, down,
                                               static_cast<unsigned long long*>(counters_.data()),
                                               grid_for(bytes / 16), stream));
    }
  }
  copy_back(stream, 2 * (bytes / 8));
  return wait();
}

CheckTally::CheckTally() : counters_(2 * sizeof(std::uint64_t)) {
  reset_counters(counters_.data(), nullptr);
  MEMSTRESS_CUDA_TRY(cudaDeviceSynchronize());
}

void CheckTally::enqueue(const void* src, std::size_t bytes, Pattern pattern, std::uint64_t seed,
                         cudaStream_t stream) {
  require_alignment(src, "check");
  if (bytes != 0) {
    MEMSTRESS_CUDA_TRY(detail::launch_check(src, bytes, pattern, seed,
                                            static_cast<unsigned long long*>(counters_.data()),
                                            grid_for(bytes / 16), stream));
  }
  checked_words_ += (bytes + 7) / 8;
}

void CheckTally::enqueue_compare(const void* a, const void* b, std::size_t bytes, cudaStream_t stream) {
  require_alignment(a, "compare");
  require_alignment(b, "compare");
  if (bytes != 0) {
    MEMSTRESS_CUDA_TRY(detail::launch_compare(a, b, bytes, static_cast<unsigned long long*>(counters_.data()),
                                              grid_for(bytes / 16), stream));
  }
  checked_words_ += (bytes + 7) / 8;
}

CheckResult CheckTally::collect() {
  std::array<std::uint64_t, 2> out{};
  MEMSTRESS_CUDA_TRY(cudaMemcpy(out.data(), counters_.data(), sizeof(out), cudaMemcpyDeviceToHost));
  reset_counters(counters_.data(), nullptr);
  MEMSTRESS_CUDA_TRY(cudaDeviceSynchronize());
  return CheckResult{std::exchange(checked_words_, 0), out[0], out[1]};
}

void spin(std::uint64_t nanoseconds, cudaStream_t stream) {
  MEMSTRESS_CUDA_TRY(detail::launch_spin(nanoseconds, stream));
}

}  // namespace memstress::kernels
