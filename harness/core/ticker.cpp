#include "harness/core/ticker.hpp"

#include <utility>

namespace memstress {

Ticker::Ticker(std::chrono::milliseconds period, std::function<void()> tick)
    : period_(period), tick_(std::move(tick)), thread_([this](const std::stop_token& stop) { loop(stop); }) {}

void Ticker::loop(const std::stop_token& stop) {
  std::unique_lock lock(mutex_);
  while (true) {
    // Sleeps one period, or less when the destructor asks the thread to stop.
    static_cast<void>(wake_.wait_for(lock, stop, period_, [] { return false; }));
    if (stop.stop_requested()) {
      return;
    }
    lock.unlock();
    try {
      tick_();
    } catch (...) {  // NOLINT(bugprone-empty-catch): see the header
    }
    lock.lock();
  }
}

}  // namespace memstress
