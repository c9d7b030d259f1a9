// The time the clocks were held down during a bandwidth case (harness/run/case_clocks.hpp, Note [Clocks
// during a bandwidth case]), read from an injected health watch: the change of each counter over the case,
// the slowdown figure profiles judge, and a note where the GPU counts no slowdown cause.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "harness/alloc/direct_allocator.hpp"
#include "harness/env/health.hpp"
#include "harness/memory/sim_backend.hpp"
#include "harness/run/case_clocks.hpp"
#include "harness/run/context.hpp"

namespace memstress {
namespace {

struct Case {
  SimBackend device{1ULL << 30};
  DirectAllocator allocator{device};
  CaseContext ctx{ParamSet{}, allocator, 1};
  Case() { ctx.begin_iteration(0, true); }

  std::vector<MetricResult> metrics() { return ctx.take_metrics(); }
};

double sample(const std::vector<MetricResult>& metrics, const std::string& name) {
  const auto m =
      std::find_if(metrics.begin(), metrics.end(), [&](const MetricResult& r) { return r.name == name; });
  if (m == metrics.end()) {
    ADD_FAILURE() << "no metric " << name;
    return -1;
  }
  EXPECT_EQ(m->unit, "ms");
  EXPECT_EQ(m->better, Better::lower);
  EXPECT_EQ(m->samples.size(), 1U);
  return m->samples.at(0);
}

TEST(CaseClocks, InjectedThrottleTimeGrowsByItsFigureAtEachRead) {
  const auto watch =
      injected_health_watch(R"({"figures": {"throttle.power_ms": 5, "pcie.gen": 4}})", "h.json");
  EXPECT_EQ(watch->throttle_ms(), (std::vector<std::pair<std::string, double>>{{"throttle.power_ms", 5}}));
  EXPECT_EQ(watch->throttle_ms(), (std::vector<std::pair<std::string, double>>{{"throttle.power_ms", 10}}));
}

TEST(CaseClocks, ACaseGetsTheTimeEachCauseHeldTheClocksDownAndTheSlowdownAmongThem) {
  const auto watch = injected_health_watch(
      R"({"figures": {"throttle.power_ms": 5, "throttle.thermal_ms": 250, "throttle.hw_power_brake_ms": 0}})",
      "h.json");
  Case c;
  CaseClocks clocks(watch.get());
  clocks.record(c.ctx);
  const std::vector<MetricResult> m = c.metrics();
  EXPECT_EQ(sample(m, "throttle.power_ms"), 5);  // recorded, not a slowdown: time at the power cap
  EXPECT_EQ(sample(m, "throttle.thermal_ms"), 250);
  EXPECT_EQ(sample(m, "throttle.hw_power_brake_ms"), 0);
  EXPECT_EQ(sample(m, "throttle.slowdown_ms"), 250);
  EXPECT_EQ(c.ctx.take_notes(),
            (std::vector<std::string>{
                "throttle.slowdown_ms: clocks slowed for heat or a power brake during this case "
                "(throttle.thermal_ms 250 ms)"}));
}

TEST(CaseClocks, AGpuThatCountsNoSlowdownCauseSaysTheSlowdownIsNotMeasured) {
  const auto watch = injected_health_watch(R"({"figures": {"throttle.power_ms": 0}})", "h.json");
  Case c;
  CaseClocks clocks(watch.get());
  clocks.record(c.ctx);
  const std::vector<MetricResult> m = c.metrics();
  EXPECT_EQ(sample(m, "throttle.power_ms"), 0);
  EXPECT_TRUE(std::none_of(m.begin(), m.end(),
                           [](const MetricResult& r) { return r.name == "throttle.slowdown_ms"; }));
  const std::vector<std::string> notes = c.ctx.take_notes();
  ASSERT_EQ(notes.size(), 1U);
  EXPECT_EQ(notes[0].rfind(std::string(kNotMeasured) + "throttle.slowdown_ms (", 0), 0U) << notes[0];
}

// A watch whose NVML cannot be used (not loadable, no such GPU): the row says why, not that the GPU counts
// nothing.
class UnusableWatch final : public HealthWatch {
 public:
  [[nodiscard]] std::string unavailable() const override { return "NVML: not loadable"; }
  [[nodiscard]] GpuHealth read() override { return {}; }
  [[nodiscard]] std::vector<std::pair<std::string, double>> throttle_ms() override { return {}; }
};

TEST(CaseClocks, AWatchThatCannotReadSaysWhyTheSlowdownIsNotMeasured) {
  UnusableWatch watch;
  Case c;
  CaseClocks clocks(&watch);
  clocks.record(c.ctx);
  EXPECT_TRUE(c.metrics().empty());
  EXPECT_EQ(c.ctx.take_notes(), (std::vector<std::string>{std::string(kNotMeasured) +
                                                          "throttle.slowdown_ms (NVML: not loadable)"}));
}

TEST(CaseClocks, WithoutAWatchACaseGetsNothing) {
  Case c;
  CaseClocks clocks(nullptr);
  clocks.record(c.ctx);
  EXPECT_TRUE(c.metrics().empty());
  EXPECT_TRUE(c.ctx.take_notes().empty());
}

}  // namespace
}  // namespace memstress
