#include "harness/burn/sim_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "harness/core/units.hpp"

namespace memstress {
namespace {

constexpr std::uint64_t mix(std::uint64_t x) noexcept {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27U)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31U);
}

// An FNV-1a hash of the bytes of a result.
template <typename T>
std::uint64_t hash_of(const std::vector<T>& values) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  for (std::size_t i = 0; i < values.size() * sizeof(T); ++i) {
    h = (h ^ bytes[i]) * 0x100000001b3ULL;
  }
  return h;
}

// A small GEMM on fixed inputs: the same bits every time.
template <typename T>
std::vector<T> gemm(std::size_t n) {
  std::vector<T> a(n * n);
  std::vector<T> b(n * n);
  for (std::size_t i = 0; i < n * n; ++i) {
    a[i] = static_cast<T>(static_cast<double>(mix(i) % 2048) / 1024.0 - 1.0);
    b[i] = static_cast<T>(static_cast<double>(mix(i + n * n) % 2048) / 1024.0 - 1.0);
  }
  std::vector<T> c(n * n, T{});
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < n; ++k) {
      for (std::size_t j = 0; j < n; ++j) {
        c[i * n + j] += a[i * n + k] * b[k * n + j];
      }
    }
  }
  return c;
}

class SimBurnEngine final : public BurnEngine {
 public:
  SimBurnEngine(std::uint64_t bytes, std::uint64_t seed, std::vector<TimedFault> faults)
      : words_(std::max<std::uint64_t>(bytes / 8, 1024)),
        staged_(kStagedWords),
        landed_(kStagedWords),
        seed_(seed),
        faults_(std::move(faults)) {}

  [[nodiscard]] std::string describe() const override {
    return fmt::format("simulated device: fill/check {} of host memory, host copies, {}x{} GEMMs on the CPU",
                       human_bytes(words_.size() * 8), kGemmN, kGemmN);
  }
  [[nodiscard]] std::string gemm_library() const override { return "host"; }

  void step(BurnWork& work, double elapsed_s) override {
    const auto began = std::chrono::steady_clock::now();
    const std::uint64_t seed = mix(seed_ + static_cast<std::uint64_t>(step_++));
    for (std::size_t i = 0; i < words_.size(); ++i) {
      words_[i] = mix(seed ^ i);
    }
    if (active(TimedFault::Kind::flip, elapsed_s)) {
      words_[kFlipWord] ^= 1ULL << 17U;
    }
    std::uint64_t bad = 0;
    std::uint64_t first = 0;
    for (std::size_t i = 0; i < words_.size(); ++i) {
      if (words_[i] != mix(seed ^ i)) {
        first = bad == 0 ? i : first;
        ++bad;
      }
    }
    work.memory_bytes += 2.0 * static_cast<double>(words_.size() * 8);
    work.checked += words_.size();
    if (bad > 0) {
      work.errors += bad;
      note_error(work.error_notes,
                 fmt::format("{} bad word(s) from {:#x} (host address of the simulated stress)", bad,
                             reinterpret_cast<std::uintptr_t>(&words_[first])));
    }
    copies(work, seed);
    note_hash(work.bf16_hashes, hash_of(gemm<float>(kGemmN)));
    note_hash(work.fp64_hashes, hash_of(gemm<double>(kGemmN)));
    const double flop = 2.0 * kGemmN * kGemmN * kGemmN;
    work.bf16_flop += flop;
    work.fp64_flop += flop;
    work.steps += 1;
    // A planted throughput drop: a fiftieth of every kind of work in the same time (the whole step waits 49
    // times as long), far past any bound, so that the host's noise (CI runs tests side by side) cannot hide
    // it.
    if (active(TimedFault::Kind::slow, elapsed_s)) {
      std::this_thread::sleep_for(49 * (std::chrono::steady_clock::now() - began));
    }
    // The GEMMs' rates over the whole step's time, not over their own few microseconds: on the host's shared
    // CPU one preemption inside them swamps those (a rank of a two-rank burn measured 87% below the other).
    const double step_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    work.bf16_seconds += step_s;
    work.fp64_seconds += step_s;
  }

 private:
  static constexpr std::size_t kStagedWords = 1U << 15U;
  static constexpr std::size_t kFlipWord = 4097;
  static constexpr std::size_t kGemmN = 24;

  [[nodiscard]] bool active(TimedFault::Kind kind, double elapsed_s) const {
    return std::any_of(faults_.begin(), faults_.end(),
                       [&](const TimedFault& f) { return f.kind == kind && elapsed_s >= f.after_s; });
  }

  // "Host to device" and back: through a staging buffer, checked on arrival.
  void copies(BurnWork& work, std::uint64_t seed) {
    for (std::size_t i = 0; i < staged_.size(); ++i) {
      staged_[i] = mix(~seed ^ i);
    }
    std::memcpy(landed_.data(), staged_.data(), staged_.size() * 8);
    std::memcpy(staged_.data(), landed_.data(), staged_.size() * 8);
    std::uint64_t bad = 0;
    for (std::size_t i = 0; i < staged_.size(); ++i) {
      bad += staged_[i] != mix(~seed ^ i) ? 1U : 0U;
    }
    work.h2d_bytes += static_cast<double>(staged_.size() * 8);
    work.d2h_bytes += static_cast<double>(staged_.size() * 8);
    work.checked += staged_.size();
    work.errors += bad;
  }

  std::vector<std::uint64_t> words_;
  std::vector<std::uint64_t> staged_;
  std::vector<std::uint64_t> landed_;
  std::uint64_t seed_;
  std::vector<TimedFault> faults_;
  std::int64_t step_ = 0;
};

}  // namespace

std::unique_ptr<BurnEngine> make_sim_burn_engine(std::uint64_t bytes, std::uint64_t seed,
                                                 std::vector<TimedFault> faults) {
  return std::make_unique<SimBurnEngine>(bytes, seed, std::move(faults));
}

}  // namespace memstress
