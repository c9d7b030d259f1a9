// main() for memstress_bench: registers the allocator micro-benchmarks (pairs, threads, random; names
// are built at startup, so they say peer and device; --plugin=PATH.so adds an allocator plugin as a peer) and
// runs Google Benchmark with the run's environment in the JSON "context", so a committed result says which
// driver, GPU and commit produced it.

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench_common.hpp"
#include "harness/alloc/factory.hpp"
#include "harness/core/error.hpp"
#include "harness/core/version.hpp"
#include "harness/env/environment.hpp"

namespace {

// memstress_bench's own flag, --plugin=PATH.so[:ALLOC:FREE] (repeatable): taken out of argv before Google
// Benchmark reads it, each checked as --allocator plugin:… is (a library that does not load, or lacks the
// functions, is bad input: exit 2).
std::vector<std::string> take_plugins(int& argc, char** argv) {
  constexpr std::string_view kFlag = "--plugin=";
  std::vector<std::string> plugins;
  if (argc < 1) {
    return plugins;
  }
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with(kFlag)) {
      plugins.emplace_back(arg.substr(kFlag.size()));
      memstress::AllocatorSpec spec;
      spec.name = "plugin:" + plugins.back();
      spec.flags.name = "allocator";
      try {
        memstress::validate(spec);
      } catch (const std::exception& e) {
        throw memstress::InputError(fmt::format("--plugin={}: {}", plugins.back(), e.what()));
      }
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  argv[argc] = nullptr;
  return plugins;
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<memstress::bench::Peers> peers;
  try {
    peers.emplace(take_plugins(argc, argv));
  } catch (const std::exception& e) {
    fmt::print(stderr, "memstress_bench: {}\n", e.what());
    return 2;
  }
  memstress::bench::register_pair_benchmarks(*peers);
  memstress::bench::register_thread_benchmarks(*peers);
  memstress::bench::register_random_benchmarks(*peers);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    return 2;
  }
  const memstress::Environment env = memstress::collect_environment();
  benchmark::AddCustomContext("memstress_version", memstress::version_string());
  benchmark::AddCustomContext("driver_version", env.driver_version.empty() ? "none" : env.driver_version);
  benchmark::AddCustomContext("cuda_runtime", memstress::format_cuda_version(env.cuda_runtime_version));
  benchmark::AddCustomContext("gpu", env.gpus.empty() ? "none" : env.gpus.front().name);
  benchmark::AddCustomContext("gpu_uuid", env.gpus.empty() ? "none" : env.gpus.front().uuid);
  benchmark::AddCustomContext("host", env.hostname);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
