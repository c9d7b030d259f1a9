#pragma once

// The registry fuzz/params.cpp plans against. The built-in registry needs the suites and their CUDA code, so
// the plan is made against stand-ins of four built-in workloads that carry their own axes (suites/axes.hpp,
// Note [The axes in one place]: every type, with and without bounds and --full values) and transfers' rule of
// which combinations are cases, with what the plan reads of them besides (whether their ranks work together,
// whether the default job runs them). And one workload of no suite, whose integer axis takes negative values,
// which no built-in axis does. tests/unit/test_axes.cpp holds each stand-in to the built-in workload of its
// name.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "harness/run/registry.hpp"
#include "harness/run/workload.hpp"
#include "suites/axes.hpp"

namespace memstress::fuzz {

// The workload of no suite.
inline constexpr std::string_view kSignedWorkload = "signed";

inline WorkloadDef plan_stand_in(std::string name, std::vector<ParamSpec> axes, bool all_ranks,
                                 bool in_default_job, std::function<bool(const ParamSet&)> applies = {}) {
  return {.name = std::move(name),
          .summary = "stand-in",
          .needs = {.all_ranks = all_ranks},
          .axes = std::move(axes),
          .in_default_job = in_default_job,
          .applies = std::move(applies),
          .prepare = [](CaseContext& /*ctx*/) -> std::unique_ptr<CaseRun> { return nullptr; }};
}

inline Registry plan_registry() {
  Registry r;
  r.add(plan_stand_in("alloc-smoke", suites::axes::alloc_smoke(), false, true));
  r.add(plan_stand_in("transfers", suites::axes::transfers(), false, true, suites::axes::transfers_applies));
  r.add(plan_stand_in("integrity", suites::axes::integrity(), false, false));
  r.add(plan_stand_in("nccl_memory", suites::axes::nccl_memory(), true, true));
  r.add(plan_stand_in(std::string(kSignedWorkload),
                      {{.name = "warm",
                        .type = ParamType::integer,
                        .defaults = {"-1"},
                        .minimum = -5,
                        .maximum = 5,
                        .help = "signed"}},
                      false, false));
  return r;
}

}  // namespace memstress::fuzz
