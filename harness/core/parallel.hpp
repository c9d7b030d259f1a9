#pragma once

// Running independent jobs on several threads: the replays of a sweep (each its own simulated device and
// allocator over one shared, read-only trace). Results go where the job writes them (job i into slot i),
// so the order of the output never depends on the threads.

#include <cstddef>
#include <functional>

namespace memstress {

// The threads to use for `jobs` jobs: the machine's hardware threads, at most `jobs`, at least 1.
[[nodiscard]] unsigned default_threads(std::size_t jobs) noexcept;

// Calls job(i) for every i in [0, n) on `threads` threads (the caller's among them) and returns when all
// are done. The first exception a job throws is rethrown here, after every thread has stopped; jobs not
// yet started when it was thrown are not started.
void parallel_for(std::size_t n, unsigned threads, const std::function<void(std::size_t)>& job);

}  // namespace memstress
