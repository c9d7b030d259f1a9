#include "suites/support/churn.hpp"

#include <chrono>
#include <deque>
#include <utility>

#include "harness/core/cuda_check.hpp"
#include "harness/core/error.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "kernels/pattern.hpp"
#include "suites/support/blocks.hpp"

namespace memstress::suites {
namespace {

constexpr std::size_t kKeep = 8;
constexpr std::size_t kCopyBytes = 32ULL << 20U;
constexpr std::uint64_t kMinShift = 20;  // 1 MiB
constexpr std::uint64_t kShifts = 7;     // .. 64 MiB

}  // namespace

Churn::Churn(Allocator& allocator, PinnedHostAllocator& host, int device, std::uint64_t seed)
    : thread_([this, &allocator, &host, device, seed](const std::stop_token& stop) {
        loop(stop, allocator, host, device, seed);
      }) {
  while (steps_.load() == 0 && !ended_.load()) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

Churn::~Churn() {
  thread_.request_stop();
  if (thread_.joinable()) {
    thread_.join();
  }
}

std::uint64_t Churn::stop() {
  thread_.request_stop();
  if (thread_.joinable()) {
    thread_.join();
  }
  if (error_) {
    std::rethrow_exception(std::exchange(error_, nullptr));
  }
  return steps_.load();
}

void Churn::loop(const std::stop_token& stop, Allocator& allocator, PinnedHostAllocator& host, int device,
                 std::uint64_t seed) noexcept {
  try {
    const cuda::ScopedDevice on(device);
    const cuda::Stream work;
    const cuda::Stream copies;
    const HostBlock staging(host, kCopyBytes);
    const DeviceBlock landing(allocator, kCopyBytes, StreamRef::from(copies.get()));
    std::deque<DeviceBlock> live;
    std::uint64_t state = seed;
    while (!stop.stop_requested()) {
      state = kernels::splitmix64(state);
      const std::size_t bytes = (1ULL << (kMinShift + state % kShifts)) + ((state >> 8U) % 256) * 4096;
      try {
        live.emplace_back(allocator, bytes, StreamRef::from(work.get()));
        kernels::fill(live.back().get(), bytes, kernels::Pattern::random, state, work.get());
      } catch (const OutOfMemoryError&) {
        live.clear();  // pressure, not a failure: let go and go on
      }
      if (live.size() > kKeep) {
        live.pop_front();  // freed in the order of `work`
      }
      MEMSTRESS_CUDA_TRY(
          cudaMemcpyAsync(landing.get(), staging.get(), kCopyBytes, cudaMemcpyHostToDevice, copies.get()));
      work.synchronize();  // our own streams only: no NCCL work is on them
      copies.synchronize();
      steps_.fetch_add(1);
    }
    live.clear();
    work.synchronize();
  } catch (...) {
    error_ = std::current_exception();
  }
  ended_.store(true);
}

}  // namespace memstress::suites
