// main() for memstress_bench: Google Benchmark with the run's environment in the JSON "context", so a
// committed result says which driver, GPU and commit produced it.

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "harness/core/version.hpp"
#include "harness/env/environment.hpp"

int main(int argc, char** argv) {
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
