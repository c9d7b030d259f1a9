#include "suites/support/size_distribution.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <bit>
#include <limits>

#include "harness/core/error.hpp"
#include "harness/core/units.hpp"

namespace memstress::suites {
namespace {

constexpr std::array<std::string_view, 5> kNames{"fixed", "uniform", "log_uniform", "pow2", "bimodal"};

// Largest k with 2^k <= x; x > 0.
std::uint64_t floor_log2(std::uint64_t x) noexcept {
  return static_cast<std::uint64_t>(std::bit_width(x)) - 1;  // an int since g++ 13, unsigned before
}

// Smallest k with 2^k >= x; x > 0.
std::uint64_t ceil_log2(std::uint64_t x) noexcept {
  return static_cast<std::uint64_t>(std::bit_width(x - 1));
}

}  // namespace

std::uint64_t PlanRng::below(std::uint64_t n) {
  // Reject the first (2^64 mod n) values so that every residue is equally likely.
  const std::uint64_t threshold = (0 - n) % n;
  std::uint64_t x = next();
  while (x < threshold) {
    x = next();
  }
  return x % n;
}

std::uint64_t PlanRng::between(std::uint64_t lo, std::uint64_t hi) {
  const std::uint64_t span = hi - lo;
  return span == std::numeric_limits<std::uint64_t>::max() ? next() : lo + below(span + 1);
}

double PlanRng::unit() {
  return static_cast<double>(next() >> 11U) * 0x1.0p-53;
}

std::string_view to_string(SizeDist dist) noexcept {
  return kNames[static_cast<std::size_t>(dist)];
}

SizeDist parse_size_dist(std::string_view name, std::string_view what) {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) {
      return static_cast<SizeDist>(i);
    }
  }
  throw InputError(
      fmt::format("{}: unknown size distribution '{}'; choose {}", what, name, fmt::join(kNames, ", ")));
}

std::span<const std::string_view> size_dist_names() noexcept {
  return kNames;
}

std::uint64_t log_uniform_size(PlanRng& rng, std::uint64_t lo, std::uint64_t hi) {
  const std::uint64_t octaves = floor_log2(hi / lo) + 1;  // those starting at lo, 2 lo, … that begin <= hi
  const std::uint64_t k = rng.below(octaves);
  const std::uint64_t first = lo << k;
  const std::uint64_t last = first > hi / 2 ? hi : std::min(hi, (first << 1U) - 1);
  return rng.between(first, last);
}

SizeDistribution::SizeDistribution(SizeDist dist, std::uint64_t min_bytes, std::uint64_t max_bytes)
    : dist_(dist), min_(min_bytes), max_(max_bytes) {
  if (dist_ == SizeDist::fixed || dist_ == SizeDist::bimodal) {
    if (max_ == 0) {
      throw InputError("max_bytes must be at least 1");
    }
    return;
  }
  if (min_ == 0 || min_ > max_) {
    throw InputError(fmt::format("min_bytes ({}) must be at least 1 and at most max_bytes ({})",
                                 exact_bytes(min_), exact_bytes(max_)));
  }
  if (dist_ == SizeDist::pow2 && ceil_log2(min_) > floor_log2(max_)) {
    throw InputError(fmt::format("dist=pow2: no power of two lies between min_bytes ({}) and max_bytes ({})",
                                 exact_bytes(min_), exact_bytes(max_)));
  }
}

std::uint64_t SizeDistribution::operator()(PlanRng& rng) const {
  switch (dist_) {
    case SizeDist::fixed:
      return max_;
    case SizeDist::uniform:
      return rng.between(min_, max_);
    case SizeDist::log_uniform:
      return log_uniform_size(rng, min_, max_);
    case SizeDist::pow2: {
      return 1ULL << rng.between(ceil_log2(min_), floor_log2(max_));
    }
    case SizeDist::bimodal:
      return rng.chance(kLargeShare) ? log_uniform_size(rng, kLargeLo, kLargeHi)
                                     : log_uniform_size(rng, kSmallLo, kSmallHi);
  }
  return max_;
}

std::uint64_t SizeDistribution::largest() const noexcept {
  switch (dist_) {
    case SizeDist::pow2:
      return 1ULL << floor_log2(max_);
    case SizeDist::bimodal:
      return kLargeHi;
    case SizeDist::fixed:
    case SizeDist::uniform:
    case SizeDist::log_uniform:
      break;
  }
  return max_;
}

}  // namespace memstress::suites
