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

class FakeWorkload final : public Workload {
 public:
  using Body = std::function<void(CaseContext&)>;

  FakeWorkload(std::string name, std::vector<ParamSpec> params, Body body, Requirements req = {},
               bool in_default = true)
      : name_(std::move(name)),
        params_(std::move(params)),
        body_(std::move(body)),
        req_(req),
        in_default_(in_default) {}

  [[nodiscard]] std::string_view name() const noexcept override { return name_; }
  [[nodiscard]] std::string_view summary() const noexcept override { return "a test workload"; }
  [[nodiscard]] std::vector<ParamSpec> params() const override { return params_; }
  [[nodiscard]] Requirements requirements() const noexcept override { return req_; }
  [[nodiscard]] bool in_default_job() const noexcept override { return in_default_; }
  [[nodiscard]] std::unique_ptr<CaseRun> prepare(CaseContext& /*ctx*/) const override {
    return std::make_unique<Run>(body_);
  }

 private:
  class Run final : public CaseRun {
   public:
    explicit Run(Body body) : body_(std::move(body)) {}
    void iteration(CaseContext& ctx) override { body_(ctx); }

   private:
    Body body_;
  };

  std::string name_;
  std::vector<ParamSpec> params_;
  Body body_;
  Requirements req_;
  bool in_default_;
};

}  // namespace memstress::testing
