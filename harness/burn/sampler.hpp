#pragma once

// The burn's telemetry sampler: a thread that reads the GPU's power, temperatures, clocks, clock event
// reasons and PCIe replays every `period` (a second) and keeps them for the interval in progress; the loop
// takes them at the interval's end (take()), so the series is bounded by the interval, never by the burn.
// A planted `throttle` fault (after:S:throttle) makes every sample from S on read hw_thermal.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "harness/env/telemetry.hpp"

namespace memstress {

struct TimedSample {
  double at_s = 0;  // seconds since the burn began
  TelemetrySample sample;
};

class Sampler {
 public:
  // `telemetry` may be null (the simulated device): samples then hold only planted readings.
  // `throttle_after_s`: a planted thermal slowdown from then on (negative: none).
  Sampler(std::unique_ptr<Telemetry> telemetry, std::chrono::milliseconds period,
          std::chrono::steady_clock::time_point began, double throttle_after_s);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;
  Sampler(Sampler&&) = delete;
  Sampler& operator=(Sampler&&) = delete;

  // The samples taken before `until_s` (seconds since the burn began) and not yet taken, oldest first (at
  // most kMaxSamples: the newest are kept); later ones stay for the next interval. Where there are none, a
  // reading of its own.
  [[nodiscard]] std::vector<TimedSample> take(double until_s);
  // Why nothing real is read ("simulated device", NVML's reason), or "".
  [[nodiscard]] const std::string& unavailable() const noexcept { return unavailable_; }

  static constexpr std::size_t kMaxSamples = 4096;

 private:
  void run(const std::stop_token& stop);
  [[nodiscard]] TimedSample read_now();

  std::unique_ptr<Telemetry> telemetry_;
  std::chrono::milliseconds period_;
  std::chrono::steady_clock::time_point began_;
  double throttle_after_s_;
  std::string unavailable_;
  std::mutex read_mutex_;  // the telemetry is read by the thread and by take()
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::vector<TimedSample> samples_;
  std::jthread thread_;  // last: it stops (and joins) before the members it uses go
};

}  // namespace memstress
