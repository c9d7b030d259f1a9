// alloc-smoke: the allocator path on any device, the simulated one included — allocate a batch of
// buffers through the shared allocator, check that they are aligned, disjoint and accounted for (the
// allocator counts them as allocated, and the device is charged at least what the allocator reserved),
// free them, and time each call.

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "harness/alloc/allocator.hpp"
#include "harness/core/units.hpp"
#include "harness/memory/backend.hpp"
#include "harness/run/context.hpp"
#include "harness/run/timing.hpp"
#include "harness/run/workload.hpp"
#include "suites/axes.hpp"
#include "suites/registry.hpp"

namespace memstress::suites {
namespace {

constexpr std::uintptr_t kAlignment = 256;  // what cudaMalloc guarantees and every allocator must keep

class AllocSmokeRun final : public CaseRun {
 public:
  explicit AllocSmokeRun(const CaseContext& ctx)
      : bytes_(ctx.params().bytes("bytes")),
        count_(static_cast<std::size_t>(ctx.params().integer("count"))) {}

  void iteration(CaseContext& ctx) override {
    Allocator& allocator = ctx.allocator();
    const std::int64_t allocated_before = allocated(allocator);
    std::vector<void*> buffers;
    buffers.reserve(count_);
    try {
      for (std::size_t i = 0; i < count_; ++i) {
        const HostTimer t;
        buffers.push_back(allocator.allocate(bytes_));
        ctx.record("alloc", "us", Better::lower, t.seconds() * 1e6);
      }
      check(ctx, buffers, allocated_before);
    } catch (...) {
      for (void* p : buffers) {
        allocator.deallocate(p);
      }
      throw;
    }
    for (void* p : buffers) {
      const HostTimer t;
      allocator.deallocate(p);
      ctx.record("free", "us", Better::lower, t.seconds() * 1e6);
    }
    // Everything freed: the allocator must account for none of it any more.
    ctx.verified(1, allocated(allocator) == allocated_before ? 0 : 1);
  }

 private:
  static std::int64_t allocated(const Allocator& allocator) {
    const MemoryStats stats = allocator.memory_stats();
    const auto it = stats.find("allocated_bytes.all.current");
    return it == stats.end() ? 0 : it->second;
  }

  void check(CaseContext& ctx, std::vector<void*> buffers, std::int64_t allocated_before) const {
    std::uint64_t misaligned = 0;
    for (void* p : buffers) {
      misaligned += (reinterpret_cast<std::uintptr_t>(p) % kAlignment != 0) ? 1U : 0U;
    }
    std::sort(buffers.begin(), buffers.end());
    std::uint64_t overlapping = 0;
    for (std::size_t i = 1; i < buffers.size(); ++i) {
      const auto prev_end = reinterpret_cast<std::uintptr_t>(buffers[i - 1]) + bytes_;
      overlapping += prev_end > reinterpret_cast<std::uintptr_t>(buffers[i]) ? 1U : 0U;
    }
    const auto total = static_cast<std::int64_t>(bytes_ * count_);
    const MemoryStats stats = ctx.allocator().memory_stats();
    const std::int64_t allocated_now = stats.at("allocated_bytes.all.current");
    const std::uint64_t unaccounted = allocated_now - allocated_before < total ? 1U : 0U;
    // Whatever the allocator says it holds must be charged on the device: used >= reserved >= allocated.
    const MemInfo mem = ctx.device().mem_info();
    const auto reserved = stats.at("reserved_bytes.all.current");
    const std::uint64_t uncharged =
        (static_cast<std::int64_t>(mem.total - mem.free) >= reserved && reserved >= allocated_now) ? 0U : 1U;
    const std::uint64_t checks = buffers.size() * 2 + 2;
    const std::uint64_t errors = misaligned + overlapping + unaccounted + uncharged;
    if (errors != 0) {
      ctx.note(fmt::format(
          "repetition {}: {} misaligned, {} overlapping, allocator accounting {}, device accounting {}",
          ctx.iteration(), misaligned, overlapping, unaccounted != 0 ? "short" : "ok",
          uncharged != 0 ? "short" : "ok"));
    }
    ctx.verified(checks, errors);
  }

  std::uint64_t bytes_;
  std::size_t count_;
};

}  // namespace

WorkloadDef workloads::alloc_smoke() {
  return {
      .name = "alloc-smoke",
      .summary =
          "allocate and free batches through the shared allocator; checks alignment, overlap, allocator and "
          "device accounting; alloc/free latency",
      .axes = axes::alloc_smoke(),  // Note [The axes in one place], suites/axes.hpp
      .headline = {"alloc"},
      .prepare = [](CaseContext& ctx)
          -> std::unique_ptr<CaseRun> {  // A batch larger than the whole device can never be live at once: a
                                         // small device (sim:8G, a MIG slice)
        // skips that case, saying why, instead of failing it with an out-of-memory error.
        const std::uint64_t bytes = ctx.params().bytes("bytes");
        const auto count = static_cast<std::uint64_t>(ctx.params().integer("count"));
        const std::uint64_t total = ctx.device().mem_info().total;
        if (count != 0 && bytes > total / count) {
          const double batch = static_cast<double>(bytes) * static_cast<double>(count);
          throw SkipCase(
              fmt::format("needs {} live at once (count x bytes); the device has {} in all",
                          batch < 1.8e19 ? human_bytes(bytes * count) : fmt::format("{:.3g} bytes", batch),
                          human_bytes(total)));
        }
        return std::make_unique<AllocSmokeRun>(ctx);
      },
  };
}

}  // namespace memstress::suites
