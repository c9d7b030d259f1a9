// main() for memstress_bench: registers the allocator micro-benchmarks (pairs, threads, random; names
// are built at startup, so they say peer and device) and runs Google Benchmark with the run's
// environment in the JSON "context", so a committed result says which driver, GPU and commit produced it.

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "bench/bench_common.hpp"
#include "harness/core/version.hpp"
#include "harness/env/environment.hpp"

int main(int argc, char** argv) {
  memstress::bench::register_pair_benchmarks();
  memstress::bench::register_thread_benchmarks();
  memstress::bench::register_random_benchmarks();
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
