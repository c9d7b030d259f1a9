#pragma once

// Deterministic random sizes for allocation plans (sizes, leak and friends).
//
// Note [Same plan everywhere]. A plan drawn from a seed must be the same on every machine, or results from
// two GPUs (or a GPU and the simulated device) would not describe the same workload. std::mt19937_64's
// output sequence is fixed by the standard, but std::uniform_int_distribution and friends are not: each
// standard library transforms the raw numbers its own way. So PlanRng keeps the engine and does the
// transforms itself in integer arithmetic (plus one exact conversion to a double in [0, 1)), and the size
// distributions below use no floating-point maths beyond that, not even log or exp, whose last bits vary
// between libms.
//
// "Log-uniform" is therefore log-uniform by octave: an octave [lo * 2^k, lo * 2^(k+1)) is picked
// uniformly, then a size uniformly inside it. Every octave of the range gets the same share of the
// requests, which is what log-uniform is for (RMM's and PyTorch's benchmarks use it to cover bytes to
// megabytes evenly); the density inside an octave is flat instead of falling as 1/x.

#include <cstdint>
#include <random>
#include <span>
#include <string_view>

namespace memstress::suites {

class PlanRng {
 public:
  explicit PlanRng(std::uint64_t seed) : engine_(seed) {}

  [[nodiscard]] std::uint64_t next() { return engine_(); }
  // Uniform in [0, n) without modulo bias; n > 0.
  [[nodiscard]] std::uint64_t below(std::uint64_t n);
  // Uniform in [lo, hi], both included; lo <= hi.
  [[nodiscard]] std::uint64_t between(std::uint64_t lo, std::uint64_t hi);
  // Uniform in [0, 1), exactly representable: the top 53 bits of one draw.
  [[nodiscard]] double unit();
  // True with probability p.
  [[nodiscard]] bool chance(double p) { return unit() < p; }

 private:
  std::mt19937_64 engine_;
};

enum class SizeDist : std::uint8_t {
  fixed,        // always max_bytes
  uniform,      // uniform in [min_bytes, max_bytes]
  log_uniform,  // log-uniform by octave in [min_bytes, max_bytes] (see the note above)
  pow2,         // a power of two in [min_bytes, max_bytes], each exponent equally likely
  bimodal,      // activation-like: mostly small (1 KiB .. 1 MiB), a share of large (16 .. 256 MiB)
};

std::string_view to_string(SizeDist dist) noexcept;
// Throws InputError naming `what` for an unknown name.
SizeDist parse_size_dist(std::string_view name, std::string_view what);
// Every name, in declaration order (for a choice axis).
std::span<const std::string_view> size_dist_names() noexcept;

// Log-uniform by octave in [lo, hi]; 1 <= lo <= hi.
std::uint64_t log_uniform_size(PlanRng& rng, std::uint64_t lo, std::uint64_t hi);

class SizeDistribution {
 public:
  // bimodal's two modes (it ignores min_bytes and max_bytes).
  static constexpr std::uint64_t kSmallLo = 1ULL << 10;
  static constexpr std::uint64_t kSmallHi = 1ULL << 20;
  static constexpr std::uint64_t kLargeLo = 16ULL << 20;
  static constexpr std::uint64_t kLargeHi = 256ULL << 20;
  static constexpr double kLargeShare = 0.10;

  // Throws InputError when min_bytes is 0 or above max_bytes, or (pow2) when no power of two lies
  // between them.
  SizeDistribution(SizeDist dist, std::uint64_t min_bytes, std::uint64_t max_bytes);

  [[nodiscard]] std::uint64_t operator()(PlanRng& rng) const;
  // The largest size it can return.
  [[nodiscard]] std::uint64_t largest() const noexcept;
  [[nodiscard]] SizeDist dist() const noexcept { return dist_; }

 private:
  SizeDist dist_ = SizeDist::fixed;
  std::uint64_t min_ = 0;
  std::uint64_t max_ = 0;
};

}  // namespace memstress::suites
