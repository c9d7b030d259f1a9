#pragma once

// Memory pressure on one GPU while something else is measured (the collectives' `pressure=churn`).
//
// Note [Churn]. A thread of its own, on streams of its own, loops until stopped: it allocates a block of
// 1-64 MiB from the shared device allocator, fills it with a pattern kernel (touching every byte), frees
// the oldest of the eight it keeps, and copies 32 MiB host-to-device from a block of the shared pinned
// host cache, then waits for its own two streams (never for anyone else's) so that its queue stays short.
// An allocation that fails for lack of memory frees what it keeps and goes on: pressure, not a failure.
// Any other exception ends the thread and is rethrown by stop().

#include <atomic>
#include <cstdint>
#include <exception>
#include <thread>

namespace memstress {
class Allocator;
class PinnedHostAllocator;
}  // namespace memstress

namespace memstress::suites {

class Churn {
 public:
  // Starts the thread on `device`; returns once it has done its first step (or failed).
  Churn(Allocator& allocator, PinnedHostAllocator& host, int device, std::uint64_t seed);
  // Stops and joins without throwing (an error not collected by stop() is lost).
  ~Churn();
  Churn(const Churn&) = delete;
  Churn& operator=(const Churn&) = delete;
  Churn(Churn&&) = delete;
  Churn& operator=(Churn&&) = delete;

  // Stops and joins the thread; rethrows what it threw. Returns the steps it made.
  std::uint64_t stop();

 private:
  void loop(const std::stop_token& stop, Allocator& allocator, PinnedHostAllocator& host, int device,
            std::uint64_t seed) noexcept;

  std::atomic<std::uint64_t> steps_{0};
  std::atomic<bool> ended_{false};
  std::exception_ptr error_;  // written by the thread before ended_, read after join
  std::jthread thread_;
};

}  // namespace memstress::suites
