#pragma once

// A configurable workload for harness tests: records a metric, reports verification counts, and
// can throw on a chosen repetition.

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "harness/run/context.hpp"
#include "harness/run/workload.hpp"

namespace memstress::testing {

using FakeBody = std::function<void(CaseContext&)>;

// A case of it runs `body` once a repetition.
inline WorkloadDef fake_workload(std::string name, std::vector<ParamSpec> axes, FakeBody body,
                                 Requirements needs = {}, bool in_default = true) {
  class Run final : public CaseRun {
   public:
    explicit Run(FakeBody body) : body_(std::move(body)) {}
    void iteration(CaseContext& ctx) override { body_(ctx); }

   private:
    FakeBody body_;
  };
  return {.name = std::move(name),
          .summary = "a test workload",
          .needs = std::move(needs),
          .axes = std::move(axes),
          .in_default_job = in_default,
          .prepare = [body = std::move(body)](CaseContext& /*ctx*/) -> std::unique_ptr<CaseRun> {
            return std::make_unique<Run>(body);
          }};
}

}  // namespace memstress::testing
