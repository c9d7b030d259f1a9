// oom: OOM thresholds through the shared allocator, on any device.
//
// Design. Two searches (axis `search`), each run fresh or after fragmenting the allocator (axis `state`):
//   largest_single — the largest single allocation, by bisection to 1 MiB between 0 and the device's free
//     memory plus what the allocator caches; ratio = largest_allocatable / what was allocatable at the start:
//     the device's free memory, or what --alloc-limit leaves where that is less (the target on a GPU:
//     >= 0.999). Under --alloc-limit the profile and every bound see the cap as the device's capacity.
//   batch — the largest batch a model-like profile fits (oom_search.hpp's BatchProfile: parameters once,
//     six activation tensors per batch and a workspace), found as users find it: from a batch that needs
//     twice the memory there is, halve until one fits, then bisect. Every trial frees everything but the
//     parameters (and the fragmenting pattern's live blocks) and empties the cache, so each trial starts
//     from the same state.
// `fragmented` runs oom_search.hpp's fragment() over 30% of what is allocatable first (after the
// parameters): small blocks stay live in every segment, so the fragmented figures are never better.
// Every OOM in a search is an answer, not an error: it is counted (num_ooms), the first message of the
// case goes into a note, and the run goes on. A memory-fraction cap is an allocator setting, not an axis:
// `--alloc-conf per_process_memory_fraction:0.5` (a run with the cap and one without).
//
// Verification: the largest block found, or the final batch, is allocated again (an OOM there is a
// data error: the search answered something that does not fit) beside the live blocks. On a GPU every
// live block is filled with a pattern and checked on the device before it is freed; on any device every
// block is checked for alignment and overlap with the others (live_blocks.hpp). Everything still live
// when an exception interrupts the case is freed by the CaseRun's LiveBlocks members.

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "harness/alloc/allocator.hpp"
#include "harness/core/error.hpp"
#include "harness/memory/backend.hpp"
#include "harness/run/context.hpp"
#include "harness/run/timing.hpp"
#include "harness/run/workload.hpp"
#include "suites/registry.hpp"
#include "suites/support/live_blocks.hpp"
#include "suites/support/oom_search.hpp"

namespace memstress::suites {
namespace {

constexpr std::uint64_t kStep = 1ULL << 20;  // largest_single's resolution
constexpr double kFragmentShare = 0.3;       // of what is allocatable, for the fragmented state

enum class Search { largest_single, batch };
enum class State { fresh, fragmented };

std::int64_t allocated(const Allocator& allocator) {
  const MemoryStats stats = allocator.memory_stats();
  const auto it = stats.find("allocated_bytes.all.current");
  return it == stats.end() ? 0 : it->second;
}

class OomRun final : public CaseRun {
 public:
  explicit OomRun(const CaseContext& ctx)
      : search_(ctx.params().text("search") == "batch" ? Search::batch : Search::largest_single),
        state_(ctx.params().text("state") == "fragmented" ? State::fragmented : State::fresh),
        profile_(BatchProfile::fit(allocator_capacity(ctx.allocator()), ctx.params().real("params_frac"),
                                   ctx.params().bytes("per_sample"), ctx.params().bytes("workspace"))),
        held_(ctx.allocator(), true),
        trial_(ctx.allocator(), false) {}

  void iteration(CaseContext& ctx) override {
    if (ctx.iteration() == 0 && search_ == Search::batch) {
      for (const std::string& a : profile_.adjustments) {
        ctx.note(fmt::format("scaled to the device: {}", a));
      }
    }
    Allocator& allocator = ctx.allocator();
    held_.release_all();
    allocator.empty_cache();
    held_.reseed(ctx.seed() + (static_cast<std::uint64_t>(ctx.iteration()) << 40U));
    SearchLog log;
    if (search_ == Search::largest_single) {
      largest_single(ctx, log);
    } else {
      batch(ctx, log);
    }
    ctx.record("num_ooms", "count", Better::none, static_cast<double>(log.ooms));
    if (!log.first_oom.empty() && !noted_oom_) {
      ctx.note(fmt::format("first OOM of the search (caught, the search goes on): {}", log.first_oom));
      noted_oom_ = true;
    }
    held_.free_all();
    held_.report(ctx);
    allocator.empty_cache();
  }

 private:
  void fragment_if_asked(const Allocator& allocator) {
    if (state_ == State::fragmented) {
      const auto span =
          static_cast<std::uint64_t>(kFragmentShare * static_cast<double>(allocatable_bound(allocator)));
      static_cast<void>(fragment(held_, span));
    }
  }

  void largest_single(CaseContext& ctx, SearchLog& log) {
    Allocator& allocator = ctx.allocator();
    const std::uint64_t free_at_start = ctx.device().mem_info().free;
    const std::uint64_t allocatable_at_start = allocatable_bound(allocator);  // the cache is empty here
    fragment_if_asked(allocator);
    const HostTimer timer;
    const std::uint64_t largest = largest_allocatable(allocator, allocatable_bound(allocator), kStep, log);
    const double seconds = timer.seconds();
    ctx.record("largest_allocatable", "bytes", Better::higher, static_cast<double>(largest));
    ctx.record("ratio", "ratio", Better::higher,
               allocatable_at_start == 0
                   ? 0.0
                   : static_cast<double>(largest) / static_cast<double>(allocatable_at_start));
    ctx.record("free_at_start", "bytes", Better::none, static_cast<double>(free_at_start));
    ctx.record("probes", "count", Better::none, static_cast<double>(log.probes));
    ctx.record("search_time", "s", Better::lower, seconds);
    if (largest > 0) {
      verify_largest(ctx, largest);
    }
  }

  // The largest block again, beside the live ones: it must fit, and be accounted for.
  void verify_largest(CaseContext& ctx, std::uint64_t largest) {
    const std::int64_t before = allocated(ctx.allocator());
    try {
      const LiveBlocks::Id id = held_.allocate(largest);
      const bool counted = allocated(ctx.allocator()) - before >= static_cast<std::int64_t>(largest);
      ctx.verified(1, counted ? 0 : 1);
      if (!counted) {
        ctx.note(fmt::format("the allocator does not count the {}-byte block as allocated", largest));
      }
      held_.free(id);
    } catch (const OutOfMemoryError& e) {
      refit_failed(ctx, fmt::format("the largest block found ({} bytes)", largest), e.what());
    }
  }

  void batch(CaseContext& ctx, SearchLog& log) {
    Allocator& allocator = ctx.allocator();
    if (profile_.params > 0) {
      static_cast<void>(held_.allocate(profile_.params));
    }
    fragment_if_asked(allocator);
    // A batch needs about per_sample bytes a sample: twice what is allocatable surely fails.
    const std::uint64_t start =
        2 * ((allocatable_bound(allocator) + profile_.per_sample - 1) / profile_.per_sample);
    const HostTimer timer;
    const std::uint64_t max_batch = max_fitting(start, [&](std::uint64_t n) {
      const bool fits = try_batch(trial_, profile_, n, log);
      trial_.release_all();
      allocator.empty_cache();
      return fits;
    });
    const double seconds = timer.seconds();
    ctx.record("max_batch", "count", Better::higher, static_cast<double>(max_batch));
    ctx.record("probes", "count", Better::none, static_cast<double>(log.probes));
    ctx.record("search_time", "s", Better::lower, seconds);
    if (max_batch > 0) {
      SearchLog again;
      if (!try_batch(held_, profile_, max_batch, again)) {
        refit_failed(ctx, fmt::format("the largest batch found ({})", max_batch), again.first_oom);
      }
    }
  }

  static void refit_failed(CaseContext& ctx, const std::string& what, std::string_view why) {
    ctx.verified(1, 1);
    ctx.note(fmt::format("{} did not fit when allocated again: {}", what, why));
  }

  Search search_;
  State state_;
  BatchProfile profile_;
  LiveBlocks held_;   // parameters, the fragmenting pattern's live blocks, the verified result
  LiveBlocks trial_;  // one trial's batch (allocation only, no data)
  bool noted_oom_ = false;
};

}  // namespace

WorkloadDef workloads::oom() {
  return {
      .name = "oom",
      .summary =
          "thresholds: the largest single allocation (binary search) against free memory, and the largest "
          "batch a model-like profile fits (halving, then bisecting), fresh and fragmented; every OOM is "
          "caught and counted (memory fraction: `--alloc-conf per_process_memory_fraction:F`); one search "
          "per case",
      .axes =
          {
              {.name = "search",
               .type = ParamType::choice,
               .defaults = {"largest_single", "batch"},
               .choices = {"largest_single", "batch"},
               .help = "largest single allocation, or largest batch of a model-like profile"},
              {.name = "state",
               .type = ParamType::choice,
               .defaults = {"fresh", "fragmented"},
               .choices = {"fresh", "fragmented"},
               .help = "search an empty allocator, or one fragmented first (small blocks left live in every "
                       "segment)"},
              {.name = "params_frac",
               .type = ParamType::real,
               .defaults = {"0.25"},
               .minimum = 0,
               .help = "batch: parameters, as a fraction of capacity"},
              {.name = "per_sample",
               .type = ParamType::bytes,
               .defaults = {"64M"},
               .minimum = 16384,
               .help = "batch: activation bytes per sample (6 tensors; scaled down so a batch of 8 fits)"},
              {.name = "workspace",
               .type = ParamType::bytes,
               .defaults = {"256M"},
               .minimum = 0,
               .help = "batch: workspace bytes per batch"},
          },
      .headline = {"largest_allocatable", "max_batch"},
      // One search per case: on a 141 GB H200 a repetition takes 3-8 s (every search probe reserves tens of
      // GiB), and a second one finds the same threshold.
      .max_repetitions = 1,
      .prepare = [](CaseContext& ctx) -> std::unique_ptr<CaseRun> { return std::make_unique<OomRun>(ctx); },
  };
}

}  // namespace memstress::suites
