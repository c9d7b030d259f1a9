#pragma once

// The value of every 8-byte word of a verifiable buffer, as a pure function of (pattern, seed, index),
// shared by the device kernels and host-side references (nccl-tests' verifiable/ idea). A buffer whose
// length is not a multiple of 8 ends with the low-order bytes of the next word's value.

#include <cstdint>

#if defined(__CUDACC__)
#define MEMSTRESS_HD __host__ __device__
#else
#define MEMSTRESS_HD
#endif

namespace memstress::kernels {

enum class Pattern : std::uint8_t {
  random,         // splitmix64(seed + index): every word differs, catches addressing errors
  zeros,          // all bits 0
  ones,           // all bits 1
  checkerboard,   // 0x5555… and 0xAAAA… alternating by word, swapped by seed parity
  walking_ones,   // one set bit walking across the word with the index
  address,        // the word's own byte offset in the buffer, xor the seed
  walking_zeros,  // one clear bit walking across the word with the index
};

MEMSTRESS_HD constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27U)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31U);
}

MEMSTRESS_HD constexpr std::uint64_t pattern_word(Pattern pattern, std::uint64_t seed,
                                                  std::uint64_t index) noexcept {
  switch (pattern) {
    case Pattern::random:
      return splitmix64(seed + index);
    case Pattern::zeros:
      return 0;
    case Pattern::ones:
      return ~0ULL;
    case Pattern::checkerboard:
      return ((index + seed) & 1U) != 0 ? 0xAAAAAAAAAAAAAAAAULL : 0x5555555555555555ULL;
    case Pattern::walking_ones:
      return 1ULL << ((index + seed) & 63U);
    case Pattern::address:
      return (index * 8U) ^ seed;
    case Pattern::walking_zeros:
      return ~(1ULL << ((index + seed) & 63U));
  }
  return 0;
}

}  // namespace memstress::kernels
