#include "harness/core/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace memstress {

unsigned default_threads(std::size_t jobs) noexcept {
  const unsigned hardware = std::max(1U, std::thread::hardware_concurrency());
  return static_cast<unsigned>(std::clamp<std::size_t>(jobs, 1, hardware));
}

void parallel_for(std::size_t n, unsigned threads, const std::function<void(std::size_t)>& job) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first;
  std::mutex first_mutex;
  const auto work = [&] {
    for (std::size_t i = next++; i < n && !failed; i = next++) {
      try {
        job(i);
      } catch (...) {
        const std::lock_guard lock(first_mutex);
        if (!first) {
          first = std::current_exception();
        }
        failed = true;
      }
    }
  };
  {
    std::vector<std::jthread> helpers;
    const auto extra =
        static_cast<unsigned>(std::min<std::size_t>(std::max(1U, threads), std::max<std::size_t>(n, 1)) - 1);
    helpers.reserve(extra);
    for (unsigned t = 0; t < extra; ++t) {
      helpers.emplace_back(work);
    }
    work();
  }  // the helpers join here
  if (first) {
    std::rethrow_exception(first);
  }
}

}  // namespace memstress
