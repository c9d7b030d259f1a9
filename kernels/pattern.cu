// Fill and check kernels for verifiable patterns, and the spin kernel. Grid-stride loops over pairs of
// 8-byte words with 16-byte accesses (the host API guarantees 16-byte alignment); the odd last word and
// a partial tail word are handled by thread 0.

#include "kernels/device_loop.cuh"
#include "kernels/launch.hpp"

namespace memstress::kernels::detail {
namespace {

constexpr std::uint64_t kNone = ~0ULL;

__global__ void fill_kernel(unsigned char* dst, std::uint64_t bytes, Pattern pattern, std::uint64_t seed) {
  const std::uint64_t words = bytes / 8;
  const std::uint64_t pairs = words / 2;
  auto* pair_ptr = reinterpret_cast<ulonglong2*>(dst);
  for (std::uint64_t i = global_thread(); i < pairs; i += grid_threads()) {
    pair_ptr[i] = make_ulonglong2(pattern_word(pattern, seed, 2 * i), pattern_word(pattern, seed, 2 * i + 1));
  }
  if (global_thread() == 0) {
    auto* word_ptr = reinterpret_cast<std::uint64_t*>(dst);
    if ((words & 1U) != 0) {
      word_ptr[words - 1] = pattern_word(pattern, seed, words - 1);
    }
    const std::uint64_t tail = pattern_word(pattern, seed, words);
    for (std::uint64_t b = words * 8; b < bytes; ++b) {
      dst[b] = static_cast<unsigned char>(tail >> (8 * (b - words * 8)));
    }
  }
}

__device__ void note_bad(std::uint64_t index, std::uint64_t& bad, std::uint64_t& first) {
  ++bad;
  first = index < first ? index : first;
}

__global__ void check_kernel(const unsigned char* src, std::uint64_t bytes, Pattern pattern,
                             std::uint64_t seed, unsigned long long* counters) {
  const std::uint64_t words = bytes / 8;
  const std::uint64_t pairs = words / 2;
  std::uint64_t bad = 0;
  std::uint64_t first = kNone;
  const auto* pair_ptr = reinterpret_cast<const ulonglong2*>(src);
  for (std::uint64_t i = global_thread(); i < pairs; i += grid_threads()) {
    const ulonglong2 v = pair_ptr[i];
    if (v.x != pattern_word(pattern, seed, 2 * i)) {
      note_bad(2 * i, bad, first);
    }
    if (v.y != pattern_word(pattern, seed, 2 * i + 1)) {
      note_bad(2 * i + 1, bad, first);
    }
  }
  if (global_thread() == 0) {
    const auto* word_ptr = reinterpret_cast<const std::uint64_t*>(src);
    if ((words & 1U) != 0 && word_ptr[words - 1] != pattern_word(pattern, seed, words - 1)) {
      note_bad(words - 1, bad, first);
    }
    const std::uint64_t tail = pattern_word(pattern, seed, words);
    for (std::uint64_t b = words * 8; b < bytes; ++b) {
      if (src[b] != static_cast<unsigned char>(tail >> (8 * (b - words * 8)))) {
        note_bad(words, bad, first);
        break;
      }
    }
  }
  report_bad(bad, first, counters);
}

__global__ void compare_kernel(const unsigned char* a, const unsigned char* b, std::uint64_t bytes,
                               unsigned long long* counters) {
  const std::uint64_t words = bytes / 8;
  const std::uint64_t pairs = words / 2;
  std::uint64_t bad = 0;
  std::uint64_t first = kNone;
  const auto* pa = reinterpret_cast<const ulonglong2*>(a);
  const auto* pb = reinterpret_cast<const ulonglong2*>(b);
  for (std::uint64_t i = global_thread(); i < pairs; i += grid_threads()) {
    const ulonglong2 x = pa[i];
    const ulonglong2 y = pb[i];
    if (x.x != y.x) {
      note_bad(2 * i, bad, first);
    }
    if (x.y != y.y) {
      note_bad(2 * i + 1, bad, first);
    }
  }
  if (global_thread() == 0) {
    for (std::uint64_t byte = pairs * 16; byte < bytes; ++byte) {
      if (a[byte] != b[byte]) {
        note_bad(byte / 8, bad, first);
      }
    }
  }
  report_bad(bad, first, counters);
}

// Moving inversions (memtest's test of coupled cells): read, compare, write the complement of what the word
// should hold (not of what was read, so that one bad read is counted once), word after word in one
// direction. On a GPU "in order" holds per wave of the grid-stride loop, not per word: each wave
// moves up (or down) the buffer.
__global__ void invert_kernel(unsigned char* buffer, std::uint64_t bytes, Pattern pattern, std::uint64_t seed,
                              bool complemented, bool descending, unsigned long long* counters) {
  const std::uint64_t words = bytes / 8;
  const std::uint64_t pairs = words / 2;
  const std::uint64_t flip = complemented ? ~0ULL : 0ULL;
  std::uint64_t bad = 0;
  std::uint64_t first = kNone;
  auto* pair_ptr = reinterpret_cast<ulonglong2*>(buffer);
  for (std::uint64_t step = global_thread(); step < pairs; step += grid_threads()) {
    const std::uint64_t i = descending ? pairs - 1 - step : step;
    const ulonglong2 v = pair_ptr[i];
    const std::uint64_t x = pattern_word(pattern, seed, 2 * i) ^ flip;
    const std::uint64_t y = pattern_word(pattern, seed, 2 * i + 1) ^ flip;
    if (v.x != x) {
      note_bad(2 * i, bad, first);
    }
    if (v.y != y) {
      note_bad(2 * i + 1, bad, first);
    }
    pair_ptr[i] = make_ulonglong2(~x, ~y);  // what should be there, complemented: one bad read stays one
  }
  if (global_thread() == 0 && (words & 1U) != 0) {
    auto* word_ptr = reinterpret_cast<std::uint64_t*>(buffer);
    const std::uint64_t x = pattern_word(pattern, seed, words - 1) ^ flip;
    if (word_ptr[words - 1] != x) {
      note_bad(words - 1, bad, first);
    }
    word_ptr[words - 1] = ~x;
  }
  report_bad(bad, first, counters);
}

__global__ void plant_kernel(std::uint64_t* buffer, std::uint64_t word, unsigned bit, PlantBit how) {
  const std::uint64_t mask = 1ULL << bit;
  switch (how) {
    case PlantBit::clear:
      buffer[word] &= ~mask;
      break;
    case PlantBit::set:
      buffer[word] |= mask;
      break;
    case PlantBit::flip:
      buffer[word] ^= mask;
      break;
  }
}

__global__ void spin_kernel(std::uint64_t nanoseconds) {
  std::uint64_t start = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  std::uint64_t now = start;
  while (now - start < nanoseconds) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  }
}

}  // namespace

cudaError_t launch_fill(void* dst, std::uint64_t bytes, Pattern pattern, std::uint64_t seed, unsigned grid,
                        cudaStream_t stream) {
  fill_kernel<<<grid, kBlock, 0, stream>>>(static_cast<unsigned char*>(dst), bytes, pattern, seed);
  return cudaGetLastError();
}

cudaError_t launch_check(const void* src, std::uint64_t bytes, Pattern pattern, std::uint64_t seed,
                         unsigned long long* counters, unsigned grid, cudaStream_t stream) {
  check_kernel<<<grid, kBlock, 0, stream>>>(static_cast<const unsigned char*>(src), bytes, pattern, seed,
                                            counters);
  return cudaGetLastError();
}

cudaError_t launch_compare(const void* a, const void* b, std::uint64_t bytes, unsigned long long* counters,
                           unsigned grid, cudaStream_t stream) {
  compare_kernel<<<grid, kBlock, 0, stream>>>(static_cast<const unsigned char*>(a),
                                              static_cast<const unsigned char*>(b), bytes, counters);
  return cudaGetLastError();
}

cudaError_t launch_invert(void* buffer, std::uint64_t bytes, Pattern pattern, std::uint64_t seed,
                          bool complemented, bool descending, unsigned long long* counters, unsigned grid,
                          cudaStream_t stream) {
  invert_kernel<<<grid, kBlock, 0, stream>>>(static_cast<unsigned char*>(buffer), bytes, pattern, seed,
                                             complemented, descending, counters);
  return cudaGetLastError();
}

cudaError_t launch_plant(void* buffer, std::uint64_t word, unsigned bit, PlantBit how, cudaStream_t stream) {
  plant_kernel<<<1, 1, 0, stream>>>(static_cast<std::uint64_t*>(buffer), word, bit, how);
  return cudaGetLastError();
}

cudaError_t launch_spin(std::uint64_t nanoseconds, cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(nanoseconds);
  return cudaGetLastError();
}

}  // namespace memstress::kernels::detail
