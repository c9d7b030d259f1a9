#include "harness/alloc/caching/sizing.hpp"

#include <bit>

namespace memstress::caching {

std::uint64_t roundup_power2_next_division(std::uint64_t size, std::uint32_t divisions) noexcept {
  if (std::has_single_bit(size) || divisions < 2) {
    return size;
  }
  const std::uint64_t floor = std::bit_floor(size);
  const std::uint64_t step = floor >> (std::bit_width(divisions) - 1);
  if (step == 0) {
    return floor << 1U;
  }
  const std::uint64_t rounded_down = size & ~(step - 1);
  return rounded_down == size ? size : rounded_down + step;
}

std::uint64_t round_size(std::uint64_t bytes, const AllocConfig& config) noexcept {
  if (bytes < kMinBlockSize) {
    return kMinBlockSize;
  }
  const std::uint32_t divisions = config.divisions_for(bytes);
  if (divisions > 1 && bytes > kMinBlockSize * divisions) {
    return roundup_power2_next_division(bytes, divisions);
  }
  return (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

}  // namespace memstress::caching
