#pragma once

#include <atomic>
#include <thread>

namespace memstress::caching {

// A test-and-test-and-set lock for the per-stream pools. Uncontended it costs one atomic exchange and
// one store (a std::mutex costs two read-modify-writes); contended it spins briefly, then yields.
// Contention is rare by design: each stream has its own pools, and threads normally own their streams.
class SpinLock {
 public:
  void lock() noexcept {
    for (int spins = 0; locked_.exchange(true, std::memory_order_acquire); ++spins) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins > 64) {
          std::this_thread::yield();
        }
      }
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace memstress::caching
