#pragma once

#include <cuda_runtime_api.h>

#include <chrono>

#include "harness/memory/cuda_handles.hpp"

namespace memstress {

// Device time between two events on one stream. Enqueue a spin kernel before start() when the region
// is short, so the host's launch overhead stays out of the measurement.
class DeviceTimer {
 public:
  void start(cudaStream_t stream) const { start_.record(stream); }
  void stop(cudaStream_t stream) const { stop_.record(stream); }
  // For APIs that record the events themselves around the part to time.
  [[nodiscard]] cudaEvent_t start_event() const noexcept { return start_.get(); }
  [[nodiscard]] cudaEvent_t stop_event() const noexcept { return stop_.get(); }
  // Waits for the stop event; seconds between the two records.
  [[nodiscard]] double seconds() const {
    stop_.synchronize();
    return static_cast<double>(cuda::Event::elapsed_ms(start_, stop_)) / 1e3;
  }
  // Seconds from the start to `event`, recorded after it; call after seconds() has waited.
  [[nodiscard]] double seconds_until(const cuda::Event& event) const {
    return static_cast<double>(cuda::Event::elapsed_ms(start_, event)) / 1e3;
  }

 private:
  cuda::Event start_;
  cuda::Event stop_;
};

// Host wall time of a scope or a call.
class HostTimer {
 public:
  HostTimer() noexcept : start_(std::chrono::steady_clock::now()) {}
  [[nodiscard]] double seconds() const noexcept {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace memstress
