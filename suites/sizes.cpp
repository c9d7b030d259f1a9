// sizes: allocation churn through the shared allocator, in the style of RMM's random_allocations.
//
// Note [The plan]. A case draws one plan from its seed (suites/support/size_distribution.hpp: the same plan
// on every machine) and replays it in every repetition: `ops` operations, each an allocation with probability
// `alloc_prob` (of a size from `dist`, on one of `streams` streams) or else the free of a random live block.
// An allocation that would take the live bytes past `max_live` becomes a free, so the plan never asks for
// more than that at once; `max_live` is clamped to 80% of the device's capacity so the defaults fit any
// device. The plan names blocks, not addresses: when an allocation fails with out of memory, the request is
// counted (metric `ooms`) and skipped, its later free is skipped too, and the run goes on — a fragmenting
// allocator shows up as OOMs and retries, not as an error.
//
// Note [What is measured]. Each allocate and deallocate call is timed on the host clock; `ops` is the
// calls per second of time spent inside them (allocator throughput: the kernels and checks between calls
// are not counted), alloc_p50/p99 and free_p50/p99 are the percentiles of one repetition's calls, one
// sample per repetition. Peaks are PyTorch's allocated/reserved peaks since the repetition began, and the
// fragmentation figures (harness/stats/fragmentation.hpp) are taken when the plan ends, before the
// blocks still live are freed. Repetitions after the first start with what the previous one left
// cached: the warm-up absorbs the cold start and the timed repetitions measure a steady state.
//
// Note [What is verified]. On a real GPU every block is filled with a pattern from its own seed when it
// is allocated and checked on the device before it is freed: a block handed out twice, or freed early,
// shows up as bad words. The simulated device has no memory behind its addresses, so there every
// allocation's bookkeeping is checked instead (aligned to 256 bytes, disjoint from every live block),
// and those checks are the verified items. Both devices also check that a repetition leaves the
// allocator's allocated bytes where they started.

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "harness/alloc/allocator.hpp"
#include "harness/core/error.hpp"
#include "harness/core/units.hpp"
#include "harness/memory/backend.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "harness/run/context.hpp"
#include "harness/run/timing.hpp"
#include "harness/run/workload.hpp"
#include "harness/stats/fragmentation.hpp"
#include "harness/stats/summary.hpp"
#include "kernels/pattern.hpp"
#include "suites/registry.hpp"
#include "suites/support/live_ranges.hpp"
#include "suites/support/size_distribution.hpp"

namespace memstress::suites {
namespace {

constexpr double kLiveShareOfCapacity = 0.8;
constexpr kernels::Pattern kPattern = kernels::Pattern::random;
constexpr int kMaxDataNotes = 5;  // bad blocks described in notes; the rest are only counted

// ---- the plan ------------------------------------------------------------------------------------------

struct PlanSpec {
  std::uint64_t ops = 0;
  double alloc_prob = 0;
  SizeDistribution sizes;  // no default: a plan always names its distribution
  std::uint64_t max_live = 0;
  std::uint32_t streams = 1;
};

struct BlockSpec {
  std::uint64_t bytes = 0;
  std::uint32_t stream = 0;
};

struct Op {
  bool alloc = false;
  std::uint32_t block = 0;  // index into Plan::blocks
};

struct Plan {
  std::vector<Op> ops;
  std::vector<BlockSpec> blocks;
};

Plan make_plan(const PlanSpec& spec, std::uint64_t seed) {
  PlanRng rng(seed);
  Plan plan;
  plan.ops.reserve(spec.ops);
  std::vector<std::uint32_t> live;  // blocks live at this point of the plan
  std::uint64_t live_bytes = 0;
  for (std::uint64_t i = 0; i < spec.ops; ++i) {
    bool alloc = live.empty() || rng.chance(spec.alloc_prob);
    if (alloc) {
      const std::uint64_t bytes = std::min(spec.sizes(rng), spec.max_live);
      const auto stream = static_cast<std::uint32_t>(rng.below(spec.streams));
      if (live.empty() || live_bytes + bytes <= spec.max_live) {
        const auto id = static_cast<std::uint32_t>(plan.blocks.size());
        plan.blocks.push_back({bytes, stream});
        plan.ops.push_back({true, id});
        live.push_back(id);
        live_bytes += bytes;
        continue;
      }
    }
    const std::size_t at = rng.below(live.size());
    const std::uint32_t id = live[at];
    live[at] = live.back();
    live.pop_back();
    live_bytes -= plan.blocks[id].bytes;
    plan.ops.push_back({false, id});
  }
  return plan;
}

// ---- checks and figures --------------------------------------------------------------------------------

std::int64_t stat(const MemoryStats& stats, std::string_view key) {
  const auto it = stats.find(key);
  return it == stats.end() ? 0 : it->second;
}

std::optional<double> stat_if(const MemoryStats& stats, std::string_view key) {
  const auto it = stats.find(key);
  return it == stats.end() ? std::nullopt : std::optional<double>(static_cast<double>(it->second));
}

void record_percentiles(CaseContext& ctx, std::string_view op, std::vector<double>& us) {
  if (us.empty()) {
    return;
  }
  std::sort(us.begin(), us.end());
  ctx.record(fmt::format("{}_p50", op), "us", Better::lower, quantile_sorted(us, 0.50));
  ctx.record(fmt::format("{}_p99", op), "us", Better::lower, quantile_sorted(us, 0.99));
}

// What one repetition measured and checked.
struct Tally {
  std::vector<double> alloc_us;
  std::vector<double> free_us;
  double call_seconds = 0;
  std::uint64_t ooms = 0;
  std::uint64_t checked = 0;
  std::uint64_t errors = 0;
};

// ---- the case ------------------------------------------------------------------------------------------

class SizesRun final : public CaseRun {
 public:
  SizesRun(CaseContext& ctx, Plan plan, std::uint32_t streams)
      : allocator_(ctx.allocator()),
        device_(ctx.device()),
        plan_(std::move(plan)),
        touch_(ctx.device().has_memory()),
        live_(plan_.blocks.size(), nullptr) {
    for (std::uint32_t i = 0; i < streams; ++i) {
      if (touch_) {
        cuda_streams_.emplace_back();
        streams_.push_back(StreamRef::from(cuda_streams_.back().get()));
      } else {
        streams_.push_back(StreamRef{i + 1});  // any distinct value is a stream on the simulated device
      }
    }
    if (touch_) {
      checker_.emplace();
    } else {
      ctx.note(
          "simulated device: no memory behind addresses, so each allocation's bookkeeping is verified "
          "instead of data (aligned to 256 bytes, disjoint from every live block)");
    }
  }

  ~SizesRun() override { release_all(); }
  SizesRun(const SizesRun&) = delete;
  SizesRun& operator=(const SizesRun&) = delete;
  SizesRun(SizesRun&&) = delete;
  SizesRun& operator=(SizesRun&&) = delete;

  void iteration(CaseContext& ctx) override {
    const MemoryStats before = allocator_.memory_stats();
    allocator_.reset_peak_stats();
    Tally tally;
    tally.alloc_us.reserve(plan_.blocks.size());
    tally.free_us.reserve(plan_.ops.size());
    for (const Op& op : plan_.ops) {
      if (op.alloc) {
        allocate_block(ctx, op.block, tally);
      } else {
        free_block(ctx, op.block, &tally);
      }
    }
    const MemoryStats end = allocator_.memory_stats();
    for (std::uint32_t id = 0; id < live_.size(); ++id) {
      free_block(ctx, id, nullptr);
    }
    // Everything freed: the allocator must account for none of it any more.
    const bool balanced = stat(allocator_.memory_stats(), "allocated_bytes.all.current") ==
                          stat(before, "allocated_bytes.all.current");
    ++tally.checked;
    tally.errors += balanced ? 0U : 1U;
    if (!balanced) {
      ctx.note(fmt::format("repetition {}: allocated bytes did not return to where they started",
                           ctx.iteration()));
    }
    ctx.verified(tally.checked, tally.errors);
    total_ooms_ += tally.ooms;
    record(ctx, tally, before, end);
  }

  void finish(CaseContext& ctx) override {
    if (total_ooms_ != 0) {
      ctx.note(fmt::format("{} allocations failed with out of memory and were skipped (warm-up included)",
                           total_ooms_));
    }
  }

 private:
  [[nodiscard]] std::uint64_t block_seed(const CaseContext& ctx, std::uint32_t id) const noexcept {
    const auto iteration = static_cast<std::uint64_t>(ctx.iteration());
    return kernels::splitmix64(ctx.seed() + iteration * plan_.blocks.size() + id);
  }

  void allocate_block(const CaseContext& ctx, std::uint32_t id, Tally& tally) {
    const BlockSpec& spec = plan_.blocks[id];
    const StreamRef stream = streams_[spec.stream];
    void* p = nullptr;
    const HostTimer timer;
    try {
      p = allocator_.allocate(spec.bytes, stream);
    } catch (const OutOfMemoryError&) {
      ++tally.ooms;
      return;
    }
    const double seconds = timer.seconds();
    live_[id] = p;
    tally.alloc_us.push_back(seconds * 1e6);
    tally.call_seconds += seconds;
    ++tally.checked;
    tally.errors += ranges_.add(p, spec.bytes) ? 0U : 1U;
    if (touch_) {
      kernels::fill(p, spec.bytes, kPattern, block_seed(ctx, id), stream.cuda());
    }
  }

  // Checks (on a GPU) and frees block `id` if it is live; times the free when `tally` is given.
  void free_block(CaseContext& ctx, std::uint32_t id, Tally* tally) {
    void* p = live_[id];
    if (p == nullptr) {
      return;  // its allocation failed with out of memory, or it is already free
    }
    const BlockSpec& spec = plan_.blocks[id];
    if (touch_) {
      const kernels::CheckResult r =
          checker_->check(p, spec.bytes, kPattern, block_seed(ctx, id), streams_[spec.stream].cuda());
      ctx.verified(r.checked_words, r.bad_words);
      if (!r.ok() && bad_blocks_noted_++ < kMaxDataNotes) {
        ctx.note(fmt::format("repetition {}: block {} ({}) has {} bad words, the first at byte offset {}",
                             ctx.iteration(), id, format_bytes(spec.bytes), r.bad_words,
                             r.first_bad_word * 8));
      }
    }
    ranges_.remove(p);
    live_[id] = nullptr;
    const HostTimer timer;
    allocator_.deallocate(p);
    const double seconds = timer.seconds();
    if (tally != nullptr) {
      tally->free_us.push_back(seconds * 1e6);
      tally->call_seconds += seconds;
    }
  }

  void record(CaseContext& ctx, Tally& tally, const MemoryStats& before, const MemoryStats& end) const {
    const auto calls = static_cast<double>(tally.alloc_us.size() + tally.free_us.size());
    if (tally.call_seconds > 0) {
      ctx.record("ops", "ops/s", Better::higher, calls / tally.call_seconds);
    }
    record_percentiles(ctx, "alloc", tally.alloc_us);
    record_percentiles(ctx, "free", tally.free_us);
    if (const auto v = stat_if(end, "allocated_bytes.all.peak")) {
      ctx.record("peak_allocated", "bytes", Better::lower, *v);
    }
    if (const auto v = stat_if(end, "reserved_bytes.all.peak")) {
      ctx.record("peak_reserved", "bytes", Better::lower, *v);
    }
    const Fragmentation f = fragmentation(end);
    ctx.record("reserved_minus_allocated", "bytes", Better::lower,
               static_cast<double>(f.reserved_minus_allocated));
    ctx.record("utilization", "ratio", Better::higher, f.utilization);
    if (f.external) {
      ctx.record("external_fragmentation", "ratio", Better::lower, *f.external);
    }
    for (const std::string_view key : {"num_alloc_retries", "num_ooms"}) {
      ctx.record(key, "count", Better::lower, static_cast<double>(stat(end, key) - stat(before, key)));
    }
  }

  // Frees whatever an interrupted repetition left live. Never throws.
  void release_all() noexcept {
    try {
      device_.synchronize();  // no kernel may still be writing a block that is about to be reused
    } catch (...) {           // NOLINT(bugprone-empty-catch): the device is gone; free what we can
    }
    for (void*& p : live_) {
      try {
        allocator_.deallocate(std::exchange(p, nullptr));
      } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
      }
    }
    ranges_.clear();
  }

  Allocator& allocator_;
  DeviceBackend& device_;
  Plan plan_;
  bool touch_;  // the device has memory: fill and check every block
  std::vector<cuda::Stream> cuda_streams_;
  std::vector<StreamRef> streams_;
  std::optional<kernels::Checker> checker_;
  std::vector<void*> live_;  // by block id; null when not live
  LiveRanges ranges_;
  std::uint64_t total_ooms_ = 0;
  int bad_blocks_noted_ = 0;
};

// ---- the workload --------------------------------------------------------------------------------------

PlanSpec plan_spec(CaseContext& ctx) {
  const ParamSet& p = ctx.params();
  const double alloc_prob = p.real("alloc_prob");
  if (alloc_prob > 1) {
    throw InputError(fmt::format("sizes: alloc_prob must be between 0 and 1, not {}", alloc_prob));
  }
  SizeDistribution sizes(parse_size_dist(p.text("dist"), "sizes.dist"), p.bytes("min_bytes"),
                         p.bytes("max_bytes"));
  const std::uint64_t asked = p.bytes("max_live");
  constexpr std::uint64_t kMiB = 1ULL << 20;
  const auto capacity_cap =
      static_cast<std::uint64_t>(static_cast<double>(ctx.device().info().capacity) * kLiveShareOfCapacity) /
      kMiB * kMiB;
  const std::uint64_t max_live = std::min(asked, capacity_cap);
  if (max_live < asked) {
    ctx.note(fmt::format("max_live clamped to {} (80% of the device's {})", format_bytes(max_live),
                         format_bytes(ctx.device().info().capacity)));
  }
  if (sizes.largest() > max_live) {
    ctx.note(fmt::format("sizes above max_live ({}) are clamped to it", format_bytes(max_live)));
  }
  return PlanSpec{.ops = static_cast<std::uint64_t>(p.integer("ops")),
                  .alloc_prob = alloc_prob,
                  .sizes = sizes,
                  .max_live = max_live,
                  .streams = static_cast<std::uint32_t>(p.integer("streams"))};
}

}  // namespace

WorkloadDef workloads::sizes() {
  std::vector<std::string> dists(size_dist_names().begin(), size_dist_names().end());
  return {
      .name = "sizes",
      .summary =
          "allocation churn in RMM's style: N operations, allocation probability, fixed / uniform / "
          "log-uniform / power-of-two / bimodal sizes, a cap on live bytes; ops/s, alloc/free p50/p99, "
          "peaks, fragmentation, retries, OOMs; on a GPU every block is filled and checked",
      .axes =
          {
              {.name = "ops",
               .type = ParamType::integer,
               .defaults = {"20000"},
               .full_defaults = {"100000"},
               .minimum = 1,
               .maximum = 10'000'000,
               .help = "allocate/free operations in the plan"},
              {.name = "alloc_prob",
               .type = ParamType::real,
               .defaults = {"0.55"},
               .minimum = 0,
               .maximum = 1,
               .help = "probability that an operation allocates"},
              {.name = "dist",
               .type = ParamType::choice,
               .defaults = {"uniform", "log_uniform", "bimodal"},
               .full_defaults = dists,
               .choices = dists,
               .help = "size distribution (bimodal: 90% 1K..1M, 10% 16M..256M; ignores min/max_bytes; fixed: "
                       "max_bytes)"},
              {.name = "min_bytes",
               .type = ParamType::bytes,
               .defaults = {"512"},
               .minimum = 1,
               .help = "smallest request"},
              {.name = "max_bytes",
               .type = ParamType::bytes,
               .defaults = {"64M"},
               .minimum = 1,
               .help = "largest request"},
              {.name = "max_live",
               .type = ParamType::bytes,
               .defaults = {"4G"},
               .full_defaults = {"4G", "16G"},
               .minimum = 1,
               .help = "cap on live bytes (at most 80% of the device)"},
              {.name = "streams",
               .type = ParamType::integer,
               .defaults = {"1"},
               .full_defaults = {"1", "4"},
               .minimum = 1,
               .maximum = 32,
               .help = "streams the blocks are allocated on"},
          },
      .headline = {"ops"},
      // min_bytes against max_bytes (and dist=pow2's power of two between them): a usage error at plan time.
      .validate = [](const ParamSet& p) -> void {
        static_cast<void>(SizeDistribution(parse_size_dist(p.text("dist"), "sizes.dist"),
                                           p.bytes("min_bytes"), p.bytes("max_bytes")));
      },
      .prepare = [](CaseContext& ctx) -> std::unique_ptr<CaseRun> {
        const PlanSpec spec = plan_spec(ctx);
        return std::make_unique<SizesRun>(ctx, make_plan(spec, ctx.seed()), spec.streams);
      },
  };
}

}  // namespace memstress::suites
