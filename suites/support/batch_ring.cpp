#include "suites/support/batch_ring.hpp"

#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "harness/core/error.hpp"
#include "harness/core/interrupt.hpp"
#include "kernels/pattern_word.hpp"

namespace memstress::suites {
namespace {

constexpr std::size_t kPage = 4096;
constexpr int kSpinsBeforeSleep = 256;
constexpr auto kPoll = std::chrono::microseconds(20);

std::atomic_ref<std::uint64_t> atomic(std::uint64_t* p) noexcept {
  return std::atomic_ref<std::uint64_t>(*p);
}

// Polls `done` until it holds, the ring is aborted, or the deadline passes.
template <typename Done>
bool poll(Done done, std::uint64_t* aborted, std::chrono::milliseconds deadline) noexcept {
  const auto until = std::chrono::steady_clock::now() + deadline;
  for (int i = 0;; ++i) {
    if (done()) {
      return true;
    }
    if (atomic(aborted).load(std::memory_order_acquire) != 0) {
      return false;
    }
    if (i >= kSpinsBeforeSleep) {
      if (std::chrono::steady_clock::now() > until) {
        return false;
      }
      std::this_thread::sleep_for(kPoll);
    } else {
      std::this_thread::yield();
    }
  }
}

// Pattern::address, spelled out so that the loops vectorize (the device checks with pattern_word).
constexpr std::uint64_t address_word(std::uint64_t seed, std::uint64_t index) noexcept {
  return (index * 8U) ^ seed;
}
static_assert(address_word(5, 7) == kernels::pattern_word(kernels::Pattern::address, 5, 7));

void produce_share(const BatchRing& ring, std::size_t worker, std::size_t workers, std::uint64_t seed,
                   std::uint64_t batches) noexcept {
  for (std::uint64_t b = worker; b < batches; b += workers) {
    if (!ring.wait_free(b)) {
      return;
    }
    ring.produce(seed, b);
    ring.publish(b);
  }
}

}  // namespace

static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free, "the ring's counters must be lock-free");

BatchRing::BatchRing(std::size_t depth, std::size_t batch_bytes, std::chrono::milliseconds deadline)
    : depth_(std::max<std::size_t>(1, depth)),
      batch_bytes_(std::max<std::size_t>(8, batch_bytes / 8 * 8)),
      deadline_(deadline),
      header_bytes_(((1 + 2 * depth_) * sizeof(std::uint64_t) + kPage - 1) / kPage * kPage),
      mapped_bytes_(header_bytes_ + depth_ * ((batch_bytes_ + kPage - 1) / kPage * kPage)) {
  base_ = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (base_ == MAP_FAILED) {  // NOLINT(performance-no-int-to-ptr)
    base_ = nullptr;
    throw OutOfMemoryError(fmt::format("dataloader: a shared ring of {} x {} bytes could not be mapped: {}",
                                       depth_, batch_bytes_, std::strerror(errno)));
  }
  std::memset(base_, 0, mapped_bytes_);  // fault the pages in now
  reset();
}

BatchRing::~BatchRing() {
  if (base_ != nullptr) {
    munmap(base_, mapped_bytes_);
  }
}

std::uint64_t* BatchRing::counter(std::size_t index) const noexcept {
  return static_cast<std::uint64_t*>(base_) + index;
}

void* BatchRing::slot(std::uint64_t batch) const noexcept {
  const std::size_t stride = (batch_bytes_ + kPage - 1) / kPage * kPage;
  return static_cast<unsigned char*>(base_) + header_bytes_ + (batch % depth_) * stride;
}

void BatchRing::reset() const noexcept {
  atomic(counter(0)).store(0, std::memory_order_relaxed);
  for (std::size_t s = 0; s < depth_; ++s) {
    atomic(counter(1 + 2 * s)).store(s, std::memory_order_relaxed);  // free_for: its first batch
    atomic(counter(2 + 2 * s)).store(0, std::memory_order_release);  // ready: none
  }
}

bool BatchRing::wait_free(std::uint64_t batch) const noexcept {
  std::uint64_t* free_for = counter(1 + 2 * (batch % depth_));
  return poll([&] { return atomic(free_for).load(std::memory_order_acquire) == batch; }, counter(0),
              deadline_);
}

void BatchRing::publish(std::uint64_t batch) const noexcept {
  atomic(counter(2 + 2 * (batch % depth_))).store(batch + 1, std::memory_order_release);
}

void BatchRing::wait_ready(std::uint64_t batch) const {
  std::uint64_t* ready = counter(2 + 2 * (batch % depth_));
  if (!poll([&] { return atomic(ready).load(std::memory_order_acquire) == batch + 1; }, counter(0),
            deadline_)) {
    const bool aborted = atomic(counter(0)).load(std::memory_order_acquire) != 0;
    throw Error(ExitCode::check_failed,
                aborted
                    ? fmt::format("dataloader: batch {} was not produced: a producer process ended before "
                                  "its share was done (killed or failed)",
                                  batch)
                    : fmt::format("dataloader: batch {} was not produced within {} ms (a producer hung or "
                                  "was stopped)",
                                  batch, deadline_.count()));
  }
}

void BatchRing::release(std::uint64_t batch) const noexcept {
  atomic(counter(1 + 2 * (batch % depth_))).store(batch + depth_, std::memory_order_release);
}

void BatchRing::abort() const noexcept {
  atomic(counter(0)).store(1, std::memory_order_release);
}

std::uint64_t BatchRing::batch_seed(std::uint64_t seed, std::uint64_t batch) noexcept {
  return kernels::splitmix64(seed ^ (batch * 0x9E3779B97F4A7C15ULL));
}

void BatchRing::produce(std::uint64_t seed, std::uint64_t batch) const noexcept {
  auto* words = static_cast<std::uint64_t*>(slot(batch));
  const std::uint64_t s = batch_seed(seed, batch);
  const std::size_t n = batch_bytes_ / 8;
  for (std::size_t i = 0; i < n; ++i) {
    words[i] = address_word(s, i);
  }
}

std::uint64_t BatchRing::count_bad(const void* data, std::uint64_t seed, std::uint64_t batch) const noexcept {
  const auto* words = static_cast<const std::uint64_t*>(data);
  const std::uint64_t s = batch_seed(seed, batch);
  std::uint64_t bad = 0;
  for (std::size_t i = 0; i < batch_bytes_ / 8; ++i) {
    bad += words[i] != address_word(s, i) ? 1U : 0U;
  }
  return bad;
}

ProducerGroup::ProducerGroup(Kind kind, std::size_t count, const BatchRing& ring, std::uint64_t seed,
                             std::uint64_t batches)
    : ring_(ring) {
  for (std::size_t w = 0; w < count; ++w) {
    if (kind == Kind::thread) {
      threads_.emplace_back(
          [&ring, w, count, seed, batches] { produce_share(ring, w, count, seed, batches); });
      continue;
    }
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
      ring_.abort();
      throw EnvironmentError(
          fmt::format("dataloader: fork of producer {} failed: {}", w, std::strerror(errno)));
    }
    if (pid == 0) {
      // The child: only the ring and the stack, no allocation, no CUDA; then straight out. It dies with
      // its parent however the parent ends (killed, interrupted, crashed), and takes SIGINT/SIGTERM itself
      // though the parent blocks them in every thread (Note [Interrupted runs], harness/core/interrupt.hpp).
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) {  // the parent died before the line above
        _exit(1);
      }
      InterruptWatch::unblock_in_child();
      produce_share(ring, w, count, seed, batches);
      _exit(0);
    }
    children_.push_back(pid);
  }
  if (!children_.empty()) {
    statuses_.assign(children_.size(), 0);
    watcher_ = std::jthread([this] { watch_children(); });
  }
}

ProducerGroup::~ProducerGroup() {
  if (!children_.empty() || !threads_.empty()) {
    ring_.abort();
    try {
      join();
    } catch (const std::exception&) {  // already reported by the case that failed
    }
  }
}

void ProducerGroup::watch_children() {
  constexpr auto kTick = std::chrono::milliseconds(2);
  std::size_t left = children_.size();
  std::vector<bool> ended(children_.size(), false);
  while (left > 0) {
    for (std::size_t i = 0; i < children_.size(); ++i) {
      if (ended[i]) {
        continue;
      }
      int status = 0;
      const pid_t r = waitpid(children_[i], &status, WNOHANG);
      if (r == children_[i] || (r < 0 && errno != EINTR)) {
        ended[i] = true;
        --left;
        statuses_[i] = r < 0 ? -1 : status;
        if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
          ring_.abort();
        }
      }
    }
    if (left > 0) {
      std::this_thread::sleep_for(kTick);
    }
  }
}

void ProducerGroup::join() {
  threads_.clear();  // jthread joins
  if (watcher_.joinable()) {
    watcher_.join();
  }
  std::string failed;
  for (std::size_t i = 0; i < children_.size(); ++i) {
    const int status = statuses_[i];
    if (status == -1) {
      failed += fmt::format(" {} (lost)", children_[i]);
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      failed += fmt::format(" {} ({})", children_[i],
                            WIFSIGNALED(status) ? fmt::format("signal {}", WTERMSIG(status))
                                                : fmt::format("exit {}", WEXITSTATUS(status)));
    }
  }
  children_.clear();
  if (!failed.empty()) {
    throw Error(ExitCode::check_failed, fmt::format("dataloader: producer processes failed:{}", failed));
  }
}

}  // namespace memstress::suites
