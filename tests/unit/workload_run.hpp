#pragma once

// The workload tests' common step: run one workload's cases through the Runner, as `memstress run`
// would, and hand back the rows.

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "apps/flag_names.hpp"
#include "harness/alloc/factory.hpp"
#include "harness/alloc/pinned_host_allocator.hpp"
#include "harness/memory/sim_backend.hpp"
#include "harness/results/sink.hpp"
#include "harness/run/plan.hpp"
#include "harness/run/runner.hpp"
#include "suites/registry.hpp"

namespace memstress::testing {

// -p NAME=V1,V2… for every selected workload.
inline ParamOverride axis(std::string name, std::vector<std::string> values) {
  return ParamOverride{"", std::move(name), std::move(values)};
}

// Each planned case as "name=value name=value ...", in axis order.
inline std::vector<std::string> labels(const std::vector<PlannedCase>& cases) {
  std::vector<std::string> out;
  for (const PlannedCase& c : cases) {
    std::string label;
    for (const auto& [k, v] : c.params.values()) {
      label += (label.empty() ? "" : " ") + k + "=" + v;
    }
    out.push_back(label);
  }
  return out;
}

// An allocator spec by name, with an optional --alloc-conf string.
inline AllocatorSpec spec(std::string name, std::string conf = {}) {
  AllocatorSpec s;
  s.name = std::move(name);
  s.conf = AllocConfig::parse(conf, "conf");
  return s;
}

// A metric's median; a test failure (and -1) when the row lacks the metric.
inline double median(const Row& row, std::string_view metric) {
  const MetricResult* m = row.metric(metric);
  if (m == nullptr) {
    ADD_FAILURE() << row.case_label() << ": no metric " << metric;
    return -1;
  }
  return m->summary.median;
}

// Runs `workload` (one warm-up, `repetitions` timed) on `allocator`; `failures` gets the Runner's count.
inline std::vector<Row> run_workload(Allocator& allocator, std::string_view workload,
                                     std::vector<ParamOverride> overrides, std::uint64_t seed = 1,
                                     int repetitions = 2, int* failures = nullptr) {
  const Registry registry = suites::builtin_registry();
  PlanRequest request;
  request.names = app::run_plan_names();  // the messages name run's flags
  request.workloads = {std::string(workload)};
  request.overrides = std::move(overrides);
  ResultSink sink(RunRecord{}, std::nullopt, "");
  RunOptions options;
  options.warmup = 1;
  options.repetitions = repetitions;
  options.seed = seed;
  options.quiet = true;
  PinnedHostAllocator host(make_host_memory_source("plain"));
  const int failed = Runner(allocator, options, &host).run(plan_cases(registry, request), sink);
  if (failures != nullptr) {
    *failures = failed;
  }
  return sink.full_rows();
}

// One simulated device and one allocator from the factory, for repeated runs of one workload.
struct SimWorkloadRun {
  SimWorkloadRun(std::string name, std::uint64_t capacity, const AllocatorSpec& spec)
      : workload(std::move(name)), device(capacity), allocator(make_allocator(spec, device)) {}

  const std::vector<Row>& run(const std::vector<std::string>& overrides, int repetitions = 2) {
    std::vector<ParamOverride> parsed;
    for (const std::string& o : overrides) {
      parsed.push_back(ParamOverride::parse(o, "-p"));
    }
    rows = run_workload(*allocator, workload, std::move(parsed), 1, repetitions, &failures);
    return rows;
  }

  [[nodiscard]] std::int64_t stat(const char* key) const { return allocator->memory_stats().at(key); }

  std::string workload;
  SimBackend device;
  std::unique_ptr<Allocator> allocator;
  std::vector<Row> rows;
  int failures = 0;
};

}  // namespace memstress::testing
