#pragma once

// One interval of a burn on one GPU as a results row (workload `burn`, parameter `interval`): throughput by
// wall clock over the interval (the work done over the interval's seconds, so time another process takes
// shows), the verification counts, the telemetry samples as metrics (each sample one value), the health
// figures that changed since the burn began, and the GEMM hashes as notes ("gemm.bf16.hash: 0x…").

#include <cstdint>
#include <string>
#include <vector>

#include "harness/burn/engine.hpp"
#include "harness/burn/sampler.hpp"
#include "harness/env/health.hpp"
#include "harness/results/row.hpp"

namespace memstress {

inline constexpr std::string_view kBurnWorkload = "burn";
inline constexpr std::string_view kBf16HashNote = "gemm.bf16.hash: ";
inline constexpr std::string_view kFp64HashNote = "gemm.fp64.hash: ";
inline constexpr std::string_view kGemmLibraryNote = "gemm.library: ";

struct IntervalInputs {
  int index = 0;       // from 0
  double seconds = 0;  // the interval's wall time
  double began_s = 0;  // since the burn began
  BurnWork work;
  std::vector<TimedSample> samples;
  std::string telemetry_unavailable;  // why the samples hold no readings, or ""
  std::uint64_t allowed_clock_reasons = 0;
  // Health figures: now and at the burn's start (counters since the driver loaded are judged by their
  // change).
  GpuHealth health_now;
  GpuHealth health_start;
  bool health_read = false;  // false: no health watch (the simulated device without injected readings)
  std::vector<std::string> planted_notes;  // a planted XID's note
  double planted_xids = 0;
  std::string gemm_library;
};

[[nodiscard]] Row interval_row(const IntervalInputs& in);

}  // namespace memstress
