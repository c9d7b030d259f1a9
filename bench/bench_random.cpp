// Random allocations, after rapidsai/rmm's benchmarks/random_allocations: a fixed plan of 10,000
// operations, each an allocation with probability 0.6 (otherwise a free of a random live allocation),
// never holding more than 4 GiB live (an allocation that would pass the cap becomes a free), and
// every allocation freed at the end. Three size mixes:
//   uniform      1 B .. 16 MiB, uniform
//   log_uniform  512 B .. 256 MiB, uniform in log2(size) (as many 1 KiB as 100 MiB requests)
//   bimodal      90% 512 B .. 64 KiB log-uniform (biases, norms, scalars), 10% 16 .. 256 MiB uniform
//                (activations): the mix that fragments a caching allocator's large pool
// The plan is built once at registration from a fixed seed with our own generator (the standard
// library's distributions differ between implementations), so every peer, device and machine replays
// exactly the same requests. One untimed replay first (a cold cache, as a training job's first step),
// then timed replays (steady state). Names read BM_Random/<peer>/<device>/<mix>.
//
// Counters: items_per_second = operations/s (allocations and frees); peak_allocated_bytes and
// peak_reserved_bytes from memory_stats() over the untimed and the timed replays (reset_peak_stats()
// first); utilization = peak allocated / peak reserved (GMLake's metric); peak_requested_bytes = the
// plan's own peak of live requested bytes, for reading allocated against what was asked for.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "bench/bench_common.hpp"

namespace memstress::bench {
namespace {

constexpr std::size_t kOperations = 10'000;
constexpr double kAllocProbability = 0.6;
constexpr std::uint64_t kMaxLiveBytes = 4ULL << 30;
constexpr std::uint64_t kSeed = 0x6d656d7374726573ULL;  // "memstres"

enum class Mix { uniform, log_uniform, bimodal };
constexpr std::array<Mix, 3> kMixes{Mix::uniform, Mix::log_uniform, Mix::bimodal};

std::string_view mix_name(Mix mix) noexcept {
  switch (mix) {
    case Mix::uniform:
      return "uniform";
    case Mix::log_uniform:
      return "log_uniform";
    case Mix::bimodal:
      return "bimodal";
  }
  return "?";
}

// splitmix64: small, fast and the same sequence everywhere.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double unit() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  std::uint64_t between(std::uint64_t lo, std::uint64_t hi) noexcept {              // [lo, hi]
    return lo + next() % (hi - lo + 1);
  }
  std::uint64_t log_between(double lo_log2, double hi_log2) noexcept {
    return static_cast<std::uint64_t>(std::exp2(lo_log2 + unit() * (hi_log2 - lo_log2)));
  }

 private:
  std::uint64_t state_;
};

std::uint64_t draw_size(Random& random, Mix mix) {
  switch (mix) {
    case Mix::uniform:
      return random.between(1, 16ULL << 20);
    case Mix::log_uniform:
      return random.log_between(9, 28);
    case Mix::bimodal:
      return random.unit() < 0.9 ? random.log_between(9, 16) : random.between(16ULL << 20, 256ULL << 20);
  }
  return 0;
}

// One step of the plan: allocate `bytes` (appended to the live list), or free live[index] (the last
// live allocation moves into its place).
struct Op {
  std::uint64_t bytes = 0;  // 0: a free
  std::size_t index = 0;
};

struct Plan {
  std::vector<Op> ops;
  std::uint64_t peak_live_bytes = 0;
  std::size_t peak_live_count = 0;
};

Plan make_plan(Mix mix) {
  Random random(kSeed + static_cast<std::uint64_t>(mix));
  Plan plan;
  std::vector<std::uint64_t> live;
  std::uint64_t live_bytes = 0;
  const auto free_at = [&](std::size_t index) {
    plan.ops.push_back(Op{0, index});
    live_bytes -= live[index];
    live[index] = live.back();
    live.pop_back();
  };
  for (std::size_t i = 0; i < kOperations; ++i) {
    const bool allocate = live.empty() || random.unit() < kAllocProbability;
    const std::uint64_t bytes = allocate ? draw_size(random, mix) : 0;
    if (allocate && live_bytes + bytes <= kMaxLiveBytes) {
      plan.ops.push_back(Op{bytes, 0});
      live.push_back(bytes);
      live_bytes += bytes;
      plan.peak_live_bytes = std::max(plan.peak_live_bytes, live_bytes);
      plan.peak_live_count = std::max(plan.peak_live_count, live.size());
    } else {
      free_at(static_cast<std::size_t>(random.between(0, live.size() - 1)));
    }
  }
  while (!live.empty()) {
    free_at(live.size() - 1);
  }
  return plan;
}

void replay(Allocator& allocator, const Plan& plan, std::vector<void*>& live) {
  for (const Op& op : plan.ops) {
    if (op.bytes != 0) {
      live.push_back(allocator.allocate(op.bytes));
    } else {
      allocator.deallocate(live[op.index]);
      live[op.index] = live.back();
      live.pop_back();
    }
  }
}

void random_case(benchmark::State& state, const Plan& plan, const Peer& peer, Device device) {
  const std::optional<Subject> subject = make_subject(state, peer, device);
  if (!subject) {
    return;
  }
  Allocator* const allocator = subject->allocator.get();
  std::vector<void*> live;
  live.reserve(plan.peak_live_count);
  try {
    allocator->reset_peak_stats();
    replay(*allocator, plan, live);  // untimed: from a cold cache
    for (auto _ : state) {
      replay(*allocator, plan, live);
    }
  } catch (const std::exception& e) {
    for (void* p : live) {
      allocator->deallocate(p);
    }
    state.SkipWithError(e.what());
    return;
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(plan.ops.size()));
  const MemoryStats stats = allocator->memory_stats();
  const auto allocated = stat(stats, "allocated_bytes.all.peak");
  const auto reserved = stat(stats, "reserved_bytes.all.peak");
  if (allocated) {
    state.counters["peak_allocated_bytes"] = static_cast<double>(*allocated);
  }
  if (reserved) {
    state.counters["peak_reserved_bytes"] = static_cast<double>(*reserved);
  }
  if (allocated && reserved && *reserved > 0) {
    state.counters["utilization"] = static_cast<double>(*allocated) / static_cast<double>(*reserved);
  }
  state.counters["peak_requested_bytes"] = static_cast<double>(plan.peak_live_bytes);
}

void register_device(Device device, std::span<const Peer> peers,
                     std::span<const std::shared_ptr<const Plan>> plans) {
  for (std::size_t m = 0; m < kMixes.size(); ++m) {
    for (const Peer& peer : peers) {
      const std::string name =
          fmt::format("{}/{}", benchmark_name("Random", peer.label, device), mix_name(kMixes[m]));
      auto* b = benchmark::RegisterBenchmark(name.c_str(),
                                             [plan = plans[m], peer, device](benchmark::State& state) {
                                               random_case(state, *plan, peer, device);
                                             });
      b->Unit(benchmark::kMillisecond)->MinTime(0.2);
      if (device == Device::cuda) {
        b->UseRealTime();
      }
    }
  }
}

}  // namespace

void register_random_benchmarks(const Peers& peers) {
  std::vector<std::shared_ptr<const Plan>> plans;
  for (const Mix mix : kMixes) {
    plans.push_back(std::make_shared<const Plan>(make_plan(mix)));
  }
  register_device(Device::sim, peers.sim(), plans);
  register_device(Device::cuda, peers.cuda(), plans);
}

}  // namespace memstress::bench
