#pragma once

// The GPU workload tests' common step: run one workload's cases on GPU 0 through the Runner and the
// caching allocator, as `memstress run` would, expecting every case to pass with data verified and the
// allocator to end with nothing allocated; hands back the rows.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/alloc/factory.hpp"
#include "harness/alloc/pinned_host_allocator.hpp"
#include "harness/memory/cuda_backend.hpp"
#include "harness/results/sink.hpp"
#include "harness/run/plan.hpp"
#include "harness/run/runner.hpp"
#include "suites/registry.hpp"

namespace memstress::testing {

inline std::vector<Row> run_on_gpu(const std::string& workload, const std::vector<std::string>& overrides,
                                   int repetitions = 3, HealthWatch* health = nullptr) {
  CudaBackend dev(0);
  AllocatorSpec s;
  s.name = "caching";
  const auto alloc = make_allocator(s, dev);
  PinnedHostAllocator host(make_host_memory_source("cuda"));
  PlanRequest request;
  request.workloads = {workload};
  for (const std::string& o : overrides) {
    request.overrides.push_back(ParamOverride::parse(o, "-p"));
  }
  ResultSink sink(RunRecord{}, std::nullopt, "");
  RunOptions opt;
  opt.repetitions = repetitions;
  opt.quiet = true;
  opt.health = health;
  EXPECT_EQ(Runner(*alloc, opt, &host).run(plan_cases(suites::builtin_registry(), request), sink), 0);
  EXPECT_EQ(alloc->memory_stats().at("allocated_bytes.all.current"), 0);
  std::vector<Row> rows = sink.full_rows();  // samples and allocator statistics included
  for (const Row& row : rows) {
    EXPECT_EQ(row.verdict, Verdict::pass) << workload << " " << row.case_label() << ": " << row.reason;
    EXPECT_GT(row.checked, 0U) << row.case_label();
    EXPECT_EQ(row.errors, 0U) << row.case_label();
  }
  return rows;
}

}  // namespace memstress::testing
