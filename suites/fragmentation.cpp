// fragmentation: adversarial and realistic allocation patterns through the shared allocator, on any device,
// and what they leave behind.
//
// Design. A pattern (axis `pattern`) is a deterministic script of allocate / free / grow steps whose sizes
// are multiples of a unit (axis `scale`):
//   interleaved  — 8 small (unit/8) and 8 large (unit) blocks allocated alternately; the large ones freed;
//                  then 8 large blocks of a slightly bigger size (9/8 unit), which fit in none of the holes.
//   growing_seq  — a transformer's training steps: per step, 4 layers each allocate activations
//                  proportional to a sequence length that grows by one every step (and attention scores
//                  proportional to its square), all kept to the end of the step and freed in reverse.
//   kv_cache     — an inference loop whose KV caches (2 layers x K and V) grow by unit/16 per step the
//                  naive way (allocate larger, copy, free old), with a transient activation around them.
//   16x8_32x4    — PyTorch's classic: 8 x unit allocated and freed, then 4 x 2 unit. On the caching
//                  allocator the 2-unit blocks fit in none of the freed 1-unit segments: with unit = 16M
//                  it reserves 256 MiB for 128 MiB of data; expandable segments merge the holes and reuse.
//   split_large  — an 8-unit block allocated and freed, then carved by 8 (small, mid) pairs; the mid ones
//                  are freed, the small ones stay live and split the segment, then a 4-unit request finds
//                  no piece large enough in 7 units of free memory.
// If a pattern's worst-case footprint (each allocation taking a segment of its own) would pass half of
// the device's capacity, the scale is halved until it does not (noted), so every pattern runs on any device.
//
// Each repetition starts with empty_cache() and reset_peak_stats(), so cases and repetitions are
// independent, runs the script and records, from the allocator's PyTorch-named statistics, the peaks, the
// three fragmentation figures (harness/stats/fragmentation.hpp) and inactive-split bytes at the end of the
// pattern; then, with the pattern's blocks still live, the largest allocatable block (oom_search.hpp, 2 MiB
// steps, capped at free + cached). A timeline of (allocated, reserved) per step is left to trace replay;
// `steps` says how long the script was.
//
// Verification (live_blocks.hpp): every block is checked for alignment and overlap with the live ones; on
// a GPU every block is filled with a pattern when allocated and checked on the device before it is freed,
// and a grown block carries its old contents, copied. The CaseRun's LiveBlocks frees whatever an exception
// leaves live. The allocator is the harness's (--allocator caching,expandable,direct compares them).

#include "harness/stats/fragmentation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/alloc/allocator.hpp"
#include "harness/core/error.hpp"
#include "harness/core/units.hpp"
#include "harness/memory/backend.hpp"
#include "harness/run/context.hpp"
#include "harness/run/workload.hpp"
#include "suites/registry.hpp"
#include "suites/support/live_blocks.hpp"
#include "suites/support/oom_search.hpp"

namespace memstress::suites {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;
constexpr std::uint64_t kSearchStep = 2 * kMiB;
constexpr std::uint64_t kMinScale = kMiB;
constexpr std::array<std::string_view, 5> kPatterns{"interleaved", "growing_seq", "kv_cache", "16x8_32x4",
                                                    "split_large"};

// One step of a pattern. Slots name blocks within the script; grow replaces a slot's block.
struct Op {
  enum class Kind : std::uint8_t { allocate, free, grow };
  Kind kind = Kind::allocate;
  std::size_t slot = 0;
  std::uint64_t bytes = 0;
};

class Script {
 public:
  std::size_t allocate(std::uint64_t bytes) {
    ops_.push_back({Op::Kind::allocate, slots_, bytes});
    return slots_++;
  }
  void free(std::size_t slot) { ops_.push_back({Op::Kind::free, slot, 0}); }
  void grow(std::size_t slot, std::uint64_t bytes) { ops_.push_back({Op::Kind::grow, slot, bytes}); }

  [[nodiscard]] const std::vector<Op>& ops() const noexcept { return ops_; }
  [[nodiscard]] std::size_t slots() const noexcept { return slots_; }

  // Bytes reserved if every allocation took a segment of its own, rounded as the caching allocator does
  // (2 MiB segments up to 1 MiB, 20 MiB up to 10 MiB, else 2 MiB multiples): no allocator here needs more.
  [[nodiscard]] std::uint64_t worst_case_footprint() const noexcept {
    std::uint64_t total = 0;
    for (const Op& op : ops_) {
      if (op.kind != Op::Kind::free) {
        total += op.bytes <= kMiB       ? 2 * kMiB
                 : op.bytes < 10 * kMiB ? 20 * kMiB
                                        : (op.bytes + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB);
      }
    }
    return total;
  }

 private:
  std::vector<Op> ops_;
  std::size_t slots_ = 0;
};

Script interleaved(std::uint64_t unit) {
  constexpr int kPairs = 8;
  Script s;
  std::vector<std::size_t> large;
  for (int i = 0; i < kPairs; ++i) {
    static_cast<void>(s.allocate(unit / 8));
    large.push_back(s.allocate(unit));
  }
  for (const std::size_t slot : large) {
    s.free(slot);
  }
  for (int i = 0; i < kPairs; ++i) {
    static_cast<void>(s.allocate(unit + unit / 8));
  }
  return s;
}

Script growing_seq(std::uint64_t unit) {
  constexpr std::uint64_t kSteps = 6;
  constexpr int kLayers = 4;
  Script s;
  for (std::uint64_t seq = 1; seq <= kSteps; ++seq) {
    std::vector<std::size_t> step;
    for (int layer = 0; layer < kLayers; ++layer) {
      step.push_back(s.allocate(seq * unit / 8));         // hidden states
      step.push_back(s.allocate(seq * seq * unit / 64));  // attention scores
      step.push_back(s.allocate(seq * unit / 4));         // MLP activations
    }
    std::reverse(step.begin(), step.end());  // backward frees in reverse
    for (const std::size_t slot : step) {
      s.free(slot);
    }
  }
  return s;
}

Script kv_cache(std::uint64_t unit) {
  constexpr std::uint64_t kSteps = 16;
  constexpr int kCaches = 4;  // 2 layers x (K, V)
  const std::uint64_t token = unit / 16;
  Script s;
  std::vector<std::size_t> caches;
  for (std::uint64_t step = 1; step <= kSteps; ++step) {
    const std::size_t activation = s.allocate(unit / 8);
    for (int c = 0; c < kCaches; ++c) {
      if (step == 1) {
        caches.push_back(s.allocate(token));
      } else {
        s.grow(caches[static_cast<std::size_t>(c)], step * token);
      }
    }
    s.free(activation);
  }
  return s;
}

Script classic_16x8_32x4(std::uint64_t unit) {
  Script s;
  std::vector<std::size_t> first;
  first.reserve(8);
  for (int i = 0; i < 8; ++i) {
    first.push_back(s.allocate(unit));
  }
  for (const std::size_t slot : first) {
    s.free(slot);
  }
  for (int i = 0; i < 4; ++i) {
    static_cast<void>(s.allocate(2 * unit));
  }
  return s;
}

Script split_large(std::uint64_t unit) {
  constexpr int kPairs = 8;
  Script s;
  s.free(s.allocate(kPairs * unit));
  std::vector<std::size_t> mids;
  for (int i = 0; i < kPairs; ++i) {
    static_cast<void>(s.allocate(unit / 8));
    mids.push_back(s.allocate(unit - unit / 8));
  }
  for (const std::size_t slot : mids) {
    s.free(slot);
  }
  static_cast<void>(s.allocate(kPairs / 2 * unit));
  return s;
}

Script make_script(std::string_view pattern, std::uint64_t unit) {
  if (pattern == "interleaved") {
    return interleaved(unit);
  }
  if (pattern == "growing_seq") {
    return growing_seq(unit);
  }
  if (pattern == "kv_cache") {
    return kv_cache(unit);
  }
  if (pattern == "16x8_32x4") {
    return classic_16x8_32x4(unit);
  }
  if (pattern == "split_large") {
    return split_large(unit);
  }
  throw InputError(fmt::format("fragmentation.pattern: unknown pattern '{}'", pattern));
}

// The scale, halved (in whole MiB) until the pattern's worst case fits in half the device.
std::uint64_t fitted_scale(std::string_view pattern, std::uint64_t scale, std::uint64_t capacity) {
  while (scale > kMinScale && make_script(pattern, scale).worst_case_footprint() > capacity / 2) {
    scale = std::max(kMinScale, scale / 2 / kMiB * kMiB);
  }
  return scale;
}

std::optional<std::int64_t> stat(const MemoryStats& stats, std::string_view key) {
  const auto it = stats.find(key);
  return it == stats.end() ? std::nullopt : std::optional<std::int64_t>(it->second);
}

class FragmentationRun final : public CaseRun {
 public:
  explicit FragmentationRun(const CaseContext& ctx)
      : requested_scale_(ctx.params().bytes("scale")),
        scale_(fitted_scale(ctx.params().text("pattern"), requested_scale_, ctx.device().info().capacity)),
        script_(make_script(ctx.params().text("pattern"), scale_)),
        blocks_(ctx.allocator(), true),
        slots_(script_.slots()) {}

  void iteration(CaseContext& ctx) override {
    if (ctx.iteration() == 0 && scale_ != requested_scale_) {
      ctx.note(fmt::format("scale {} lowered to {} so that the pattern fits in half of the device",
                           format_bytes(requested_scale_), format_bytes(scale_)));
    }
    Allocator& allocator = ctx.allocator();
    blocks_.release_all();
    allocator.empty_cache();
    allocator.reset_peak_stats();
    blocks_.reseed(ctx.seed() + (static_cast<std::uint64_t>(ctx.iteration()) << 40U));

    run_script();
    record_state(ctx, allocator.memory_stats());
    SearchLog log;
    const std::uint64_t largest =
        largest_allocatable(allocator, allocatable_bound(allocator), kSearchStep, log);
    ctx.record("largest_allocatable", "bytes", Better::higher, static_cast<double>(largest));

    blocks_.free_all();
    blocks_.report(ctx);
  }

 private:
  void run_script() {
    std::fill(slots_.begin(), slots_.end(), std::nullopt);
    for (const Op& op : script_.ops()) {
      std::optional<LiveBlocks::Id>& slot = slots_[op.slot];
      switch (op.kind) {
        case Op::Kind::allocate:
          slot = blocks_.allocate(op.bytes);
          break;
        case Op::Kind::free:
          blocks_.free(slot.value());
          slot.reset();
          break;
        case Op::Kind::grow:
          slot = blocks_.grow(slot.value(), op.bytes);
          break;
      }
    }
  }

  void record_state(CaseContext& ctx, const MemoryStats& stats) const {
    const Fragmentation f = fragmentation(stats);
    const auto bytes = [&](std::string_view metric, Better better, std::optional<std::int64_t> value) {
      if (value) {
        ctx.record(metric, "bytes", better, static_cast<double>(*value));
      }
    };
    ctx.record("steps", "count", Better::none, static_cast<double>(script_.ops().size()));
    bytes("peak_allocated", Better::none, stat(stats, "allocated_bytes.all.peak"));
    bytes("peak_reserved", Better::lower, stat(stats, "reserved_bytes.all.peak"));
    ctx.record("utilization", "ratio", Better::higher, f.utilization);
    ctx.record("reserved_minus_allocated", "bytes", Better::lower,
               static_cast<double>(f.reserved_minus_allocated));
    bytes("inactive_split_bytes", Better::lower, stat(stats, "inactive_split_bytes.all.current"));
    if (f.external) {
      ctx.record("external_fragmentation", "ratio", Better::lower, *f.external);
    }
  }

  std::uint64_t requested_scale_;
  std::uint64_t scale_;
  Script script_;
  LiveBlocks blocks_;  // the pattern's live blocks; freed by its destructor if an exception interrupts
  std::vector<std::optional<LiveBlocks::Id>> slots_;
};

}  // namespace

WorkloadDef workloads::fragmentation() {
  const std::vector<std::string> patterns(kPatterns.begin(), kPatterns.end());
  return {
      .name = "fragmentation",
      .summary =
          "adversarial and realistic patterns (interleaved lifetimes, growing sequence lengths, a growing KV "
          "cache, 8 x 16 MiB then 4 x 32 MiB, a large segment split by small blocks): peaks, utilization, "
          "inactive-split bytes, the largest block still allocatable; one search per case",
      .axes =
          {
              {.name = "pattern",
               .type = ParamType::choice,
               .defaults = patterns,
               .choices = patterns,
               .help = "allocation pattern"},
              {.name = "scale",
               .type = ParamType::bytes,
               .defaults = {"64M"},
               .full_defaults = {"16M", "64M", "256M"},
               .minimum = static_cast<double>(kMinScale),
               .help = "the pattern's unit size (lowered where the pattern would pass half of the device)"},
          },
      .headline = {"utilization"},
      // One search per case: on a 141 GB H200 a repetition takes 3-8 s (every search probe reserves tens of
      // GiB), and a second one finds the same threshold.
      .max_repetitions = 1,
      .prepare = [](CaseContext& ctx) -> std::unique_ptr<CaseRun> {
        return std::make_unique<FragmentationRun>(ctx);
      },
  };
}

}  // namespace memstress::suites
