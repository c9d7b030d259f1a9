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
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "harness/alloc/allocator.hpp"
#include "harness/memory/backend.hpp"

namespace memstress::bench {

enum class Device { sim, cuda };

// The simulated device is an 80 GiB GPU (an H100's capacity), so sizes and caps mean the same on both.
inline constexpr std::uint64_t kSimCapacity = 80ULL << 30;

// One peer of the benchmarks: the label in their names and the --allocator spec it is built from.
struct Peer {
  std::string_view label;  // "caching", "plugin-caching"
  std::string_view spec;   // "caching", "plugin:/…/libmemstress_caching_plugin.so"
};

// The peers each device runs: every peer of `memstress list` on the GPU, those that run on the simulated
// device (allocator_peers()) there too. A peer this build lacks ("torch", PyTorch's own caching allocator,
// outside the gpu-torch preset; the rmm-* peers without RMM) has its rows skipped with the reason.
// "plugin-caching" is examples/allocator-plugin's caching plugin, found beside the binary (the build tree's
// examples/allocator-plugin/, or an install's lib/memstress/plugins/) and loaded by path as
// `--allocator plugin:PATH` loads it (bound to memstress's backend, so it runs on both devices). Each
// `--plugin=PATH.so[:ALLOC:FREE]` given to memstress_bench adds a peer "plugin-NAME" (libNAME.so) on both
// devices: a plugin that allocates with CUDA itself skips its simulated rows with the reason. Two plugins of
// one label are InputError. The views point into the object, which therefore neither copies nor moves.
class Peers {
 public:
  explicit Peers(const std::vector<std::string>& plugins);
  Peers(const Peers&) = delete;
  Peers& operator=(const Peers&) = delete;
  Peers(Peers&&) = delete;
  Peers& operator=(Peers&&) = delete;
  ~Peers() = default;

  [[nodiscard]] std::span<const Peer> cuda() const noexcept { return cuda_; }
  [[nodiscard]] std::span<const Peer> sim() const noexcept { return sim_; }

 private:
  Peer keep(std::string label, std::string spec);

  std::deque<std::string> text_;  // what the views point into (a deque never moves its elements)
  std::vector<Peer> cuda_, sim_;
};

// The label of a plugin peer: "plugin-" and the library's file name without "lib", "memstress_",
// "_plugin" and ".so" (libmemstress_caching_plugin.so: plugin-caching; libmy_alloc.so: plugin-my_alloc).
[[nodiscard]] std::string plugin_label(std::string_view spec);

// "sim" or "cuda", the device part of a benchmark name.
[[nodiscard]] std::string_view device_name(Device device) noexcept;

// The backend for one benchmark run, or null after state.SkipWithError when it cannot be had.
[[nodiscard]] std::unique_ptr<DeviceBackend> make_device(benchmark::State& state, Device device);

// The peer over `backend`, or null after state.SkipWithError when it cannot be built.
[[nodiscard]] std::unique_ptr<Allocator> make_peer(benchmark::State& state, const Peer& peer,
                                                   DeviceBackend& backend);

// A benchmark's device and allocator (the allocator is destroyed first), labelled with the device's
// name; nullopt when either is unavailable, the state then skipped with the reason.
struct Subject {
  std::unique_ptr<DeviceBackend> backend;
  std::unique_ptr<Allocator> allocator;
};
[[nodiscard]] std::optional<Subject> make_subject(benchmark::State& state, const Peer& peer, Device device);

// A statistic by its PyTorch name ("reserved_bytes.all.peak"), when the allocator reports it.
[[nodiscard]] std::optional<std::int64_t> stat(const MemoryStats& stats, std::string_view key);

// "BM_<family>/<peer>/<device>", the name a reader sees before the benchmark's arguments.
[[nodiscard]] std::string benchmark_name(std::string_view family, std::string_view peer, Device device);

// Registration, called once from main() before the benchmarks run (bench_pairs.cpp, bench_threads.cpp,
// bench_random.cpp).
// `peers` outlives the benchmarks' runs (main() owns it).
void register_pair_benchmarks(const Peers& peers);
void register_thread_benchmarks(const Peers& peers);
void register_random_benchmarks(const Peers& peers);

}  // namespace memstress::bench
