#pragma once

// A thread that calls a function every period until the Ticker is destroyed: the destructor stops the
// thread and joins it (RAII), so the function never runs after the Ticker is gone. For what must move
// while the main thread is busy with something else (the live progress line during a long case). The
// first call comes one period after construction. An exception from the function is swallowed: a tick is
// never worth ending the process for.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace memstress {

class Ticker {
 public:
  Ticker(std::chrono::milliseconds period, std::function<void()> tick);
  ~Ticker() = default;  // thread_ (a jthread) asks its loop to stop, which wakes it, and joins
  Ticker(const Ticker&) = delete;
  Ticker& operator=(const Ticker&) = delete;
  Ticker(Ticker&&) = delete;
  Ticker& operator=(Ticker&&) = delete;

 private:
  void loop(const std::stop_token& stop);

  std::chrono::milliseconds period_;
  std::function<void()> tick_;
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::jthread thread_;  // last: started after what it uses, and destroyed (joined) before it
};

}  // namespace memstress
