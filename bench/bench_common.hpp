#pragma once

// Shared pieces of the allocator micro-benchmarks: the devices they run on, building a peer over one
// (or skipping the benchmark with the reason when it cannot be had), and reading allocator statistics.
//
// Every benchmark builds its own device backend and allocator when it starts and destroys them when
// it ends, so runs do not see each other's caches. A benchmark on the real GPU checks
// cuda::device_count() first and skips with "needs a CUDA device" without ever constructing a
// CudaBackend, so the binary runs cleanly (GPU rows skipped) on a machine without one.

#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "harness/alloc/allocator.hpp"
#include "harness/memory/backend.hpp"

namespace memstress::bench {

enum class Device { sim, cuda };

// The simulated device is an 80 GiB GPU (an H100's capacity), so sizes and caps mean the same on both.
inline constexpr std::uint64_t kSimCapacity = 80ULL << 30;

// The peers each device runs. "torch" is PyTorch's own caching allocator (the gpu-torch preset builds it;
// elsewhere its rows are skipped: "torch peer not built"); the rmm-* peers are skipped with the reason
// where the build has no RMM; "plugin-caching" is examples/allocator-plugin's caching plugin, loaded by
// path as `--allocator plugin:PATH` loads it (bound to memstress's backend, so it runs on both devices).
inline constexpr std::string_view kPluginPeer = "plugin-caching";
inline constexpr std::array<std::string_view, 9> kCudaPeers{
    "caching", "expandable", "direct", "async", "rmm-pool", "rmm-arena", "rmm-async", kPluginPeer, "torch"};
inline constexpr std::array<std::string_view, 4> kSimPeers{"caching", "expandable", "direct", kPluginPeer};

// "sim" or "cuda", the device part of a benchmark name.
[[nodiscard]] std::string_view device_name(Device device) noexcept;

// The backend for one benchmark run, or null after state.SkipWithError when it cannot be had.
[[nodiscard]] std::unique_ptr<DeviceBackend> make_device(benchmark::State& state, Device device);

// The peer named `peer` over `backend`, or null after state.SkipWithError when it cannot be built.
[[nodiscard]] std::unique_ptr<Allocator> make_peer(benchmark::State& state, std::string_view peer,
                                                   DeviceBackend& backend);

// A benchmark's device and allocator (the allocator is destroyed first), labelled with the device's
// name; nullopt when either is unavailable, the state then skipped with the reason.
struct Subject {
  std::unique_ptr<DeviceBackend> backend;
  std::unique_ptr<Allocator> allocator;
};
[[nodiscard]] std::optional<Subject> make_subject(benchmark::State& state, std::string_view peer,
                                                  Device device);

// A statistic by its PyTorch name ("reserved_bytes.all.peak"), when the allocator reports it.
[[nodiscard]] std::optional<std::int64_t> stat(const MemoryStats& stats, std::string_view key);

// "BM_<family>/<peer>/<device>", the name a reader sees before the benchmark's arguments.
[[nodiscard]] std::string benchmark_name(std::string_view family, std::string_view peer, Device device);

// Registration, called once from main() before the benchmarks run (bench_pairs.cpp, bench_threads.cpp,
// bench_random.cpp).
void register_pair_benchmarks();
void register_thread_benchmarks();
void register_random_benchmarks();

}  // namespace memstress::bench
