// Allocation pair latency: allocate + deallocate of one size on one thread, a cache hit (one untimed
// pair warms the cache first), for every peer on the real GPU and the caching peers on the simulated
// 80 GiB device. Names read BM_Pair/<peer>/<device>/<bytes>; rows of one size and device are adjacent,
// so peers compare line by line. `direct` is the cudaMalloc/cudaFree baseline (it never hits a cache).
//
// Counters: items_per_second = pairs/s; device_allocs_per_pair = device reservations per timed pair
// (0 for a cache hit, 1 for direct); reserved_bytes = what the peer holds from the device afterwards.

#include <array>
#include <cstdint>
#include <exception>
#include <span>
#include <string_view>

#include "bench/bench_common.hpp"

namespace memstress::bench {
namespace {

constexpr std::array<std::int64_t, 7> kSizes{512, 4 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20, 1 << 30};

void pair_case(benchmark::State& state, const Peer& peer, Device device) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const std::optional<Subject> subject = make_subject(state, peer, device);
  if (!subject) {
    return;
  }
  Allocator* const allocator = subject->allocator.get();
  try {
    allocator->deallocate(allocator->allocate(bytes));  // warm: every timed pair is a cache hit
    const auto allocs_before = stat(allocator->memory_stats(), "num_device_alloc");
    for (auto _ : state) {
      void* p = allocator->allocate(bytes);
      benchmark::DoNotOptimize(p);
      allocator->deallocate(p);
    }
    const MemoryStats after = allocator->memory_stats();
    state.SetItemsProcessed(state.iterations());
    if (const auto allocs = stat(after, "num_device_alloc"); allocs && allocs_before) {
      state.counters["device_allocs_per_pair"] = benchmark::Counter(
          static_cast<double>(*allocs - *allocs_before), benchmark::Counter::kAvgIterations);
    }
    if (const auto reserved = stat(after, "reserved_bytes.all.current")) {
      state.counters["reserved_bytes"] = static_cast<double>(*reserved);
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void register_device(Device device, std::span<const Peer> peers) {
  for (const std::int64_t bytes : kSizes) {
    for (const Peer& peer : peers) {
      auto* b = benchmark::RegisterBenchmark(
          benchmark_name("Pair", peer.label, device).c_str(),
          [peer, device](benchmark::State& state) { pair_case(state, peer, device); });
      b->Arg(bytes)->Unit(benchmark::kNanosecond)->MinTime(0.2);
      if (device == Device::cuda) {
        b->UseRealTime();
      }
    }
  }
}

}  // namespace

void register_pair_benchmarks(const Peers& peers) {
  register_device(Device::sim, peers.sim());
  register_device(Device::cuda, peers.cuda());
}

}  // namespace memstress::bench
