// Allocation pair latency (allocate + deallocate of one size, one thread) per allocator and device.
// The caching allocators of the allocator issue join this file; `direct` on a GPU is the cudaMalloc
// baseline they are measured against.

#include <benchmark/benchmark.h>

#include <memory>

#include "harness/alloc/factory.hpp"
#include "harness/memory/cuda_backend.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "harness/memory/sim_backend.hpp"

namespace memstress {
namespace {

void pair_loop(benchmark::State& state, Allocator& allocator) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    void* p = allocator.allocate(bytes);
    benchmark::DoNotOptimize(p);
    allocator.deallocate(p);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::string(allocator.name()));
}

void BM_PairSim(benchmark::State& state) {
  SimBackend device(80ULL << 30);
  const auto allocator = make_allocator("direct", device);
  pair_loop(state, *allocator);
}

void BM_PairCuda(benchmark::State& state) {
  if (cuda::device_count() == 0) {
    state.SkipWithError("needs a CUDA device");
    return;
  }
  CudaBackend device(0);
  const auto allocator = make_allocator("direct", device);
  pair_loop(state, *allocator);
}

BENCHMARK(BM_PairSim)->RangeMultiplier(64)->Range(512, 1 << 30);
BENCHMARK(BM_PairCuda)->RangeMultiplier(64)->Range(512, 1 << 30)->UseRealTime();

}  // namespace
}  // namespace memstress
