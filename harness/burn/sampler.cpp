#include "harness/burn/sampler.hpp"

#include <algorithm>
#include <iterator>

namespace memstress {

Sampler::Sampler(std::unique_ptr<Telemetry> telemetry, std::chrono::milliseconds period,
                 std::chrono::steady_clock::time_point began, double throttle_after_s)
    : telemetry_(std::move(telemetry)), period_(period), began_(began), throttle_after_s_(throttle_after_s) {
  unavailable_ = telemetry_ == nullptr ? std::string("the simulated device has no telemetry")
                                       : telemetry_->unavailable();
  thread_ = std::jthread([this](const std::stop_token& stop) { run(stop); });
}

Sampler::~Sampler() {
  thread_.request_stop();
  wake_.notify_all();
}

TimedSample Sampler::read_now() {
  TimedSample s;
  s.at_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count();
  if (telemetry_ != nullptr && telemetry_->unavailable().empty()) {
    const std::lock_guard lock(read_mutex_);
    try {
      s.sample = telemetry_->read();
    } catch (const std::exception& e) {  // on the sampler's thread: a reading that failed, judged as such
      s.sample.errors.emplace_back(e.what());
    }
  }
  if (throttle_after_s_ >= 0 && s.at_s >= throttle_after_s_) {
    s.sample.reasons = s.sample.reasons.value_or(0) | *clock_reason_bit("hw_thermal");
  }
  return s;
}

void Sampler::run(const std::stop_token& stop) {
  auto next = std::chrono::steady_clock::now();
  while (!stop.stop_requested()) {
    TimedSample s = read_now();
    {
      std::unique_lock lock(mutex_);
      if (samples_.size() == kMaxSamples) {
        samples_.erase(samples_.begin());
      }
      samples_.push_back(std::move(s));
      next += period_;
      wake_.wait_until(lock, stop, next, [] { return false; });
    }
  }
}

std::vector<TimedSample> Sampler::take(double until_s) {
  std::vector<TimedSample> out;
  {
    std::lock_guard lock(mutex_);
    const auto later = std::find_if(samples_.begin(), samples_.end(),
                                    [&](const TimedSample& s) { return s.at_s >= until_s; });
    out.assign(std::make_move_iterator(samples_.begin()), std::make_move_iterator(later));
    samples_.erase(samples_.begin(), later);
  }
  if (out.empty()) {  // an interval shorter than the period: one reading of its own
    out.push_back(read_now());
  }
  return out;
}

}  // namespace memstress
