// leak: memory that grows epoch after epoch, and a detector for it.
//
// Note [Epochs]. A repetition runs `epochs` epochs. Each allocates a working set of `per_epoch` bytes in
// blocks of mixed sizes (log-uniform by octave from 4 KiB to per_epoch/16, from a plan drawn once from the
// case's seed) and frees it in reverse order, as a training step frees its activations — except a
// `retained` fraction of the bytes, which stays allocated until the repetition ends, like tensors kept in
// a list by mistake. After each epoch's frees the allocator's allocated_bytes.all.current is sampled;
// a least-squares line through those samples gives growth_per_epoch (its slope) and growth_r2, and leaked
// is what is still allocated after the last epoch. per_epoch is clamped so that the working set and
// everything retained fit in 60% of the device.
//
// Note [Verdict]. The growth test (support/leak_growth.hpp) flags a slope above max(1 MiB, 0.5% of per_epoch)
// per epoch that the line explains (R² > 0.9). Since the retained fraction is known, the verdict checks the
// detector against it: a case with retained > 0 must be flagged and one with retained = 0 must not. So the
// default job (retained 0 and 0.05) passes while exercising both sides of the detector, and a retained = 0
// case fails only when allocated memory really grows — when the allocator itself leaks. A case with retained
// > 0 is a self-test (Workload::self_test): its `leaked` is the planted leak, and the table says so
// ("self-test: planted leak found") rather than let a pass read as healthy beside hundreds of MiB leaked.
// Each repetition also checks that freeing everything brings the allocated bytes back to where they started,
// and on a real GPU every block is filled with a pattern when allocated and checked on the device before it
// is freed (the retained ones at the end of the repetition, after the epochs that followed them).

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <optional>
#include <vector>

#include "harness/alloc/allocator.hpp"
#include "harness/core/error.hpp"
#include "harness/core/units.hpp"
#include "harness/memory/backend.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "harness/run/context.hpp"
#include "harness/run/workload.hpp"
#include "kernels/pattern.hpp"
#include "suites/registry.hpp"
#include "suites/support/leak_growth.hpp"
#include "suites/support/size_distribution.hpp"

namespace memstress::suites {

namespace {

constexpr std::uint64_t kMinBlock = 4ULL << 10;
constexpr std::uint64_t kBlocksPerEpoch = 16;  // the largest block is per_epoch / this
constexpr double kDeviceShare = 0.6;
constexpr kernels::Pattern kPattern = kernels::Pattern::random;
constexpr int kMaxDataNotes = 5;  // bad blocks described in notes; the rest are only counted

// ---- the plan ------------------------------------------------------------------------------------------

struct LeakBlock {
  std::uint64_t bytes = 0;
  bool retained = false;
};
using Epoch = std::vector<LeakBlock>;

// Marks blocks as retained, in random order, while they fit in `target` bytes; at least one when
// target > 0, so that a tiny fraction still leaks something.
void choose_retained(PlanRng& rng, Epoch& epoch, std::uint64_t target) {
  std::vector<std::size_t> order(epoch.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  for (std::size_t i = order.size(); i > 1; --i) {
    std::swap(order[i - 1], order[rng.below(i)]);
  }
  std::uint64_t kept = 0;
  for (const std::size_t i : order) {
    if (kept + epoch[i].bytes <= target) {
      epoch[i].retained = true;
      kept += epoch[i].bytes;
    }
  }
  if (target > 0 && kept == 0) {
    std::min_element(epoch.begin(), epoch.end(), [](const LeakBlock& a, const LeakBlock& b) {
      return a.bytes < b.bytes;
    })->retained = true;
  }
}

Epoch make_epoch(PlanRng& rng, std::uint64_t per_epoch, double retained) {
  const std::uint64_t lo = std::min(kMinBlock, per_epoch);
  const std::uint64_t hi = std::max(lo, per_epoch / kBlocksPerEpoch);
  Epoch epoch;
  std::uint64_t total = 0;
  while (total < per_epoch) {
    const std::uint64_t bytes = std::min(log_uniform_size(rng, lo, hi), per_epoch - total);
    epoch.push_back({bytes, false});
    total += bytes;
  }
  choose_retained(rng, epoch, static_cast<std::uint64_t>(retained * static_cast<double>(per_epoch)));
  return epoch;
}

std::vector<Epoch> make_plan(std::int64_t epochs, std::uint64_t per_epoch, double retained,
                             std::uint64_t seed) {
  PlanRng rng(seed);
  std::vector<Epoch> plan;
  for (std::int64_t e = 0; e < epochs; ++e) {
    plan.push_back(make_epoch(rng, per_epoch, retained));
  }
  return plan;
}

// "allocated memory grows by 12.80 MiB per epoch (R² = 0.999)"
std::string describe(const Growth& g) {
  const double slope = g.bytes_per_epoch;
  if (slope == 0) {
    return "allocated memory is the same after every epoch";
  }
  return fmt::format("allocated memory {} by {} per epoch (R² = {:.3f})", slope < 0 ? "shrinks" : "grows",
                     human_bytes(static_cast<std::uint64_t>(std::llround(std::fabs(slope)))), g.r2);
}

// ---- the case ------------------------------------------------------------------------------------------

struct LiveBlock {
  void* ptr = nullptr;
  std::uint64_t bytes = 0;
  std::uint64_t seed = 0;
};

class LeakRun final : public CaseRun {
 public:
  LeakRun(CaseContext& ctx, std::vector<Epoch> plan, std::uint64_t per_epoch, double retained)
      : allocator_(ctx.allocator()),
        device_(ctx.device()),
        plan_(std::move(plan)),
        per_epoch_(per_epoch),
        retained_(retained),
        touch_(ctx.device().has_memory()) {
    if (touch_) {
      cuda_stream_.emplace();
      stream_ = StreamRef::from(cuda_stream_->get());
      checker_.emplace();
    }
  }

  ~LeakRun() override { release_all(); }
  LeakRun(const LeakRun&) = delete;
  LeakRun& operator=(const LeakRun&) = delete;
  LeakRun(LeakRun&&) = delete;
  LeakRun& operator=(LeakRun&&) = delete;

  void iteration(CaseContext& ctx) override {
    const std::int64_t baseline = allocated();
    next_seed_ = kernels::splitmix64(ctx.seed() + static_cast<std::uint64_t>(ctx.iteration()));
    std::vector<double> series;
    series.reserve(plan_.size());
    for (const Epoch& epoch : plan_) {
      run_epoch(ctx, epoch);
      series.push_back(static_cast<double>(allocated() - baseline));
    }
    judge(ctx, fit_growth(series), series.back());
    while (!retained_blocks_.empty()) {
      free_last(ctx, retained_blocks_);
    }
    const bool balanced = allocated() == baseline;
    ctx.verified(1, balanced ? 0 : 1);
    if (!balanced) {
      ctx.note(fmt::format(
          "repetition {}: {} still allocated after everything was freed", ctx.iteration(),
          human_bytes(static_cast<std::uint64_t>(std::max<std::int64_t>(0, allocated() - baseline)))));
    }
  }

 private:
  [[nodiscard]] std::int64_t allocated() const {
    const MemoryStats stats = allocator_.memory_stats();
    const auto it = stats.find("allocated_bytes.all.current");
    return it == stats.end() ? 0 : it->second;
  }

  void run_epoch(CaseContext& ctx, const Epoch& epoch) {
    for (const LeakBlock& b : epoch) {
      const LiveBlock live{allocator_.allocate(b.bytes, stream_), b.bytes, next_seed_++};
      (b.retained ? retained_blocks_ : working_).push_back(live);
      if (touch_) {
        kernels::fill(live.ptr, live.bytes, kPattern, live.seed, stream_.cuda());
      }
    }
    while (!working_.empty()) {
      free_last(ctx, working_);
    }
  }

  // Checks (on a GPU) and frees the last block of `blocks`.
  void free_last(CaseContext& ctx, std::vector<LiveBlock>& blocks) {
    const LiveBlock b = blocks.back();
    if (touch_) {
      const kernels::CheckResult r = checker_->check(b.ptr, b.bytes, kPattern, b.seed, stream_.cuda());
      ctx.verified(r.checked_words, r.bad_words);
      if (!r.ok() && bad_blocks_noted_++ < kMaxDataNotes) {
        ctx.note(fmt::format("repetition {}: a block of {} has {} bad words, the first at byte offset {}",
                             ctx.iteration(), format_bytes(b.bytes), r.bad_words, r.first_bad_word * 8));
      }
    }
    blocks.pop_back();
    allocator_.deallocate(b.ptr);
  }

  // The detector against the configured truth: retained > 0 must be flagged, retained = 0 must not.
  void judge(CaseContext& ctx, const Growth& g, double leaked) {
    const bool flagged = growth_flagged(g, per_epoch_);
    const bool expected = retained_ > 0;
    ctx.verified(1, flagged == expected ? 0 : 1);
    ctx.record("growth_per_epoch", "bytes/epoch", Better::lower, g.bytes_per_epoch);
    ctx.record("growth_r2", "ratio", Better::none, g.r2);
    ctx.record("leaked", "bytes", Better::lower, leaked);
    const std::string threshold = human_bytes(static_cast<std::uint64_t>(growth_threshold(per_epoch_)));
    if (flagged != expected) {
      ctx.note(
          fmt::format("repetition {}: {}: {}, but retained = {} ({} per epoch, threshold {} with R² > 0.9)",
                      ctx.iteration(), describe(g), flagged ? "flagged as a leak" : "not flagged", retained_,
                      flagged ? "nothing retained" : "memory is retained", threshold));
    } else if (!noted_) {
      ctx.note(fmt::format("{}: {}, as expected with retained = {} (threshold {} per epoch with R² > 0.9)",
                           describe(g), flagged ? "flagged as a leak" : "not flagged", retained_, threshold));
      noted_ = true;
    }
  }

  // Frees whatever an interrupted repetition left live. Never throws.
  void release_all() noexcept {
    try {
      device_.synchronize();  // no kernel may still be writing a block that is about to be reused
    } catch (...) {           // NOLINT(bugprone-empty-catch): the device is gone; free what we can
    }
    for (std::vector<LiveBlock>* blocks : {&working_, &retained_blocks_}) {
      for (const LiveBlock& b : *blocks) {
        try {
          allocator_.deallocate(b.ptr);
        } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
        }
      }
      blocks->clear();
    }
  }

  Allocator& allocator_;
  DeviceBackend& device_;
  std::vector<Epoch> plan_;
  std::uint64_t per_epoch_;
  double retained_;
  bool touch_;  // the device has memory: fill and check every block
  std::optional<cuda::Stream> cuda_stream_;
  StreamRef stream_{1};  // on the simulated device any value is a stream
  std::optional<kernels::Checker> checker_;
  std::vector<LiveBlock> working_;          // this epoch's working set
  std::vector<LiveBlock> retained_blocks_;  // kept until the repetition ends
  std::uint64_t next_seed_ = 0;
  bool noted_ = false;
  int bad_blocks_noted_ = 0;
};

// ---- the workload --------------------------------------------------------------------------------------

// per_epoch, clamped so that the working set plus everything retained fits in 60% of the device.
std::uint64_t fitted_per_epoch(CaseContext& ctx, std::int64_t epochs, double retained) {
  const std::uint64_t asked = ctx.params().bytes("per_epoch");
  const std::uint64_t capacity = ctx.device().info().capacity;
  const double budget =
      kDeviceShare * static_cast<double>(capacity) / (1 + retained * static_cast<double>(epochs));
  const std::uint64_t fitted = std::min(asked, static_cast<std::uint64_t>(budget));
  if (fitted < asked) {
    ctx.note(fmt::format("per_epoch clamped to {} so that {} epochs fit in 60% of the device's {}",
                         format_bytes(fitted), epochs, format_bytes(capacity)));
  }
  if (fitted == 0) {
    throw InputError(fmt::format("leak: the device ({}) is too small", format_bytes(capacity)));
  }
  return fitted;
}

// A retained amount under the detector's threshold cannot be told from noise: such a case would fail
// whatever the allocator does, so it is refused (with a margin of 2x) instead.
void require_detectable(std::uint64_t per_epoch, double retained) {
  const double per_epoch_retained = retained * static_cast<double>(per_epoch);
  const double needed = 2 * growth_threshold(per_epoch);
  if (retained > 0 && per_epoch_retained < needed * (1 - 1e-9)) {  // 1% of 256M is exactly enough
    throw InputError(fmt::format(
        "leak: retained x per_epoch = {} per epoch is below what the detector reliably sees ({}, twice its "
        "threshold); raise retained or per_epoch",
        human_bytes(static_cast<std::uint64_t>(per_epoch_retained)),
        human_bytes(static_cast<std::uint64_t>(needed))));
  }
}

}  // namespace

WorkloadDef workloads::leak() {
  return {
      .name = "leak",
      .summary =
          "epochs that free their working set except a retained fraction; fits allocated bytes per epoch to "
          "a line and flags growth > max(1 MiB, 0.5% of per_epoch)/epoch with R² > 0.9. Passes when the "
          "detector agrees with the configuration (retained > 0 flagged, retained = 0 not), so a retained = "
          "0 case fails only if the allocator itself leaks",
      .axes =
          {
              {.name = "epochs",
               .type = ParamType::integer,
               .defaults = {"20"},
               .full_defaults = {"100"},
               .minimum = 3,
               .maximum = 10'000,
               .help = "epochs per repetition"},
              {.name = "per_epoch",
               .type = ParamType::bytes,
               .defaults = {"256M"},
               .full_defaults = {"256M", "1G"},
               .minimum = 64 << 10,
               .help = "bytes allocated per epoch"},
              {.name = "retained",
               .type = ParamType::real,
               .defaults = {"0", "0.05"},
               .full_defaults = {"0", "0.02", "0.05"},
               .minimum = 0,
               .maximum = 1,
               .help = "fraction of each epoch's bytes kept until the repetition ends: 0, or enough for "
                       "twice the growth threshold (at least 1% and 2 MiB per epoch)"},
          },
      .headline = {"leaked"},
      // Note [Verdict]: a case with retained > 0 plants the leak that the detector must find.
      .self_test = [](const ParamSet& params) -> std::string {
        return params.real("retained") > 0 ? "planted leak found" : std::string();
      },
      .prepare = [](CaseContext& ctx) -> std::unique_ptr<CaseRun> {
        const std::int64_t epochs = ctx.params().integer("epochs");
        const double retained = ctx.params().real("retained");
        if (retained > 1) {
          throw InputError(fmt::format("leak: retained must be between 0 and 1, not {}", retained));
        }
        const std::uint64_t per_epoch = fitted_per_epoch(ctx, epochs, retained);
        require_detectable(per_epoch, retained);
        return std::make_unique<LeakRun>(ctx, make_plan(epochs, per_epoch, retained, ctx.seed()), per_epoch,
                                         retained);
      },
  };
}

}  // namespace memstress::suites
