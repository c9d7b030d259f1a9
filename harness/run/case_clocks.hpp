#pragma once

// Note [Clocks during a bandwidth case]. A bandwidth figure taken while the GPU's clocks were held down is
// not the GPU's bandwidth, and a GPU that slows down for heat or an external power brake under a copy is
// not healthy (DCGM's diagnostic fails such a slowdown; it does not fail time at the power cap). So where the
// run watches the GPU's health (HealthWatch: NVML on a real GPU, MEMSTRESS_INJECT_HEALTH on the simulated
// device), the runner reads the throttle counters before and after each case of a workload that measures
// bandwidth, and the row gets the change of each as a metric in ms (throttle.power_ms, throttle.thermal_ms,
// throttle.hw_thermal_ms, ...), plus
//   throttle.slowdown_ms: the time slowed for heat or a power brake (thermal, hw_thermal, hw_power_brake),
// the figure acceptance profiles judge (`max: 0`). Warm-up is inside the window: a slowdown then slows the
// measured repetitions too. Where the GPU counts none of those three causes, the row says so with a
// `not measured: throttle.slowdown_ms (...)` note, and a check on it is skipped, not passed.

#include <string>
#include <utility>
#include <vector>

namespace memstress {

class CaseContext;
class HealthWatch;

class CaseClocks {
 public:
  // Reads the counters now; with a null watch, does nothing.
  explicit CaseClocks(HealthWatch* watch);
  // Records the change since construction as the case's metrics (one sample each).
  void record(CaseContext& ctx);

 private:
  HealthWatch* watch_;
  std::vector<std::pair<std::string, double>> start_;
};

}  // namespace memstress
