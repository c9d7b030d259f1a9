#pragma once

// Note [Clocks during a bandwidth case]. A bandwidth figure taken while the GPU's clocks were held down is
// not the GPU's bandwidth, and a GPU that slows down for heat or an external power brake under a copy is
// not healthy (DCGM's diagnostic fails such a slowdown; it does not fail time at the power cap). So where the
// run watches the GPU's health (HealthWatch: NVML on a real GPU, MEMSTRESS_INJECT_HEALTH on the simulated
// device), the runner reads the throttle counters before and after each case of a workload that measures
// bandwidth, and the row gets the change of each as a metric in ms (throttle.power_ms, throttle.thermal_ms,
// throttle.hw_thermal_ms, ...), plus
//   throttle.slowdown_ms: the sum of the time slowed for heat or a power brake (thermal, hw_thermal,
//   hw_power_brake; the causes can overlap, so the sum can pass the case's own time),
// the figure acceptance profiles judge (`max: 0`), and a note `throttle.slowdown_ms: ...` by cause when it is
// not 0 (a failed check quotes it). Warm-up is inside the window: a slowdown then slows the measured
// repetitions too. Where the counters cannot be read (NVML unusable, a read that failed after the case) or
// the GPU counts none of those three causes, the row says why with a `not measured: throttle.slowdown_ms
// (...)` note, and a check on it is skipped, not passed. A case that throws records none. The watch is this
// rank's GPU: a p2p case's peer is not read.

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
