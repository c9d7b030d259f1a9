// Contention: 1 to 16 threads, each on its own stream, doing allocate + deallocate pairs of one size
// through ONE allocator shared by all of them (as every workload thread of a process shares the
// device's allocator). Names read BM_Threads/<peer>/<device>/<bytes>/real_time/threads:<n>;
// items_per_second is the aggregate pairs/s of all threads over wall time.
//
// Sharing across Google Benchmark's threads: every thread runs the registered lambda on the same
// benchmark object, so the lambda captures one SharedRun (a shared_ptr made at registration, not a
// global). Thread 0 fills it before the timed loop and empties it after; the framework's start and stop
// barriers (entering and leaving the `for (auto _ : state)` loop) order those against every thread's
// use, which is why the other threads read it only inside the loop. Runs of one benchmark (thread
// counts, iteration probes) are sequential, so one SharedRun per registered benchmark suffices.
// A thread that hits an error stops working but keeps iterating to the stop barrier, so thread 0
// never tears the allocator down while another thread is still using it.

#include <array>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench_common.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "harness/memory/stream_ref.hpp"

namespace memstress::bench {
namespace {

constexpr std::array<std::int64_t, 2> kSizes{512, 1 << 20};
constexpr std::array<int, 5> kThreads{1, 2, 4, 8, 16};

// What thread 0 builds for all threads of one run. Destruction order: allocator, streams, device.
struct SharedRun {
  std::unique_ptr<DeviceBackend> backend;
  std::vector<cuda::Stream> cuda_streams;  // GPU: one per thread
  std::vector<StreamRef> streams;          // the stream of thread i
  std::unique_ptr<Allocator> allocator;

  // Called by thread 0 only; on failure skips (thread 0's state) and leaves `allocator` null.
  void set_up(benchmark::State& state, const Peer& peer, Device device) {
    backend = make_device(state, device);
    if (!backend) {
      return;
    }
    const auto threads = static_cast<std::size_t>(state.threads());
    try {
      for (std::size_t i = 0; i < threads; ++i) {
        if (device == Device::cuda) {
          streams.push_back(StreamRef::from(cuda_streams.emplace_back().get()));
        } else {
          streams.push_back(StreamRef{i + 1});
        }
      }
      allocator = make_peer(state, peer, *backend);
      if (!allocator) {
        return;
      }
      const auto bytes = static_cast<std::size_t>(state.range(0));
      for (const StreamRef stream : streams) {  // warm each stream's pool: timed pairs are cache hits
        allocator->deallocate(allocator->allocate(bytes, stream));
      }
      state.SetLabel(backend->info().name.c_str());
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      allocator.reset();
    }
  }

  void tear_down() noexcept {
    allocator.reset();
    streams.clear();
    cuda_streams.clear();
    backend.reset();
  }
};

void threads_case(benchmark::State& state, SharedRun& run, const Peer& peer, Device device) {
  if (state.thread_index() == 0) {
    run.set_up(state, peer, device);
  }
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const auto index = static_cast<std::size_t>(state.thread_index());
  std::string error;
  for (auto _ : state) {  // entering the loop waits for every thread, so run is set up here
    if (run.allocator == nullptr) {
      state.SkipWithError("allocator not built (see thread 0)");
      break;  // leaving early is safe: nothing is shared when there is no allocator
    }
    if (!error.empty()) {
      continue;
    }
    try {
      void* p = run.allocator->allocate(bytes, run.streams[index]);
      benchmark::DoNotOptimize(p);
      run.allocator->deallocate(p);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (!error.empty()) {
    state.SkipWithError(error.c_str());
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {  // leaving the loop waited for every thread
    run.tear_down();
  }
}

void register_device(Device device, std::span<const Peer> peers) {
  for (const std::int64_t bytes : kSizes) {
    for (const Peer& peer : peers) {
      auto run = std::make_shared<SharedRun>();
      auto* b = benchmark::RegisterBenchmark(
          benchmark_name("Threads", peer.label, device).c_str(),
          [run, peer, device](benchmark::State& state) { threads_case(state, *run, peer, device); });
      b->Arg(bytes)->Unit(benchmark::kNanosecond)->MinTime(0.2)->UseRealTime();
      for (const int n : kThreads) {
        b->Threads(n);
      }
    }
  }
}

}  // namespace

void register_thread_benchmarks(const Peers& peers) {
  register_device(Device::sim, peers.sim());
  register_device(Device::cuda, peers.cuda());
}

}  // namespace memstress::bench
