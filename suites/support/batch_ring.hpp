#pragma once

// Note [The batch ring]. The dataloader's producers hand batches to its pinning stage through a ring of
// `depth` slots of `batch_bytes` each. Batch b goes to slot b mod depth. A slot's two counters say who may
// touch it: a producer may write batch b into it once `free_for` equals b (the batch before it in that
// slot has been taken), and the pinning stage may read it once `ready` equals b + 1. Both live in the same
// MAP_SHARED anonymous mapping as the slots, so producers may be threads or forked worker processes (as
// PyTorch's DataLoader workers write into shared memory): the counters are 8-byte atomics, lock-free and
// address-free on every platform we build for, used through std::atomic_ref.
//
// Waiting is polling with a short sleep, which works across processes without a futex or a shared mutex.
// Every wait gives up after a deadline (a producer that died or hangs), or when the ring is aborted, and
// says which batch it was waiting for.
//
// Producers write the `address` pattern from the batch's own seed (kernels/pattern_word.hpp): one word
// per 8 bytes, as cheap as a write can be, so producers cost memory bandwidth and little else; a batch
// that is stale, torn or in the wrong slot fails its check.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace memstress::suites {

class BatchRing {
 public:
  // batch_bytes is rounded down to a multiple of 8 (at least 8).
  BatchRing(std::size_t depth, std::size_t batch_bytes, std::chrono::milliseconds deadline);
  ~BatchRing();
  BatchRing(const BatchRing&) = delete;
  BatchRing& operator=(const BatchRing&) = delete;
  BatchRing(BatchRing&&) = delete;
  BatchRing& operator=(BatchRing&&) = delete;

  [[nodiscard]] std::size_t depth() const noexcept { return depth_; }
  [[nodiscard]] std::size_t batch_bytes() const noexcept { return batch_bytes_; }
  [[nodiscard]] void* slot(std::uint64_t batch) const noexcept;

  // Producer side. False when the ring was aborted or the deadline passed (the caller stops).
  [[nodiscard]] bool wait_free(std::uint64_t batch) const noexcept;
  void publish(std::uint64_t batch) const noexcept;
  // Consumer side. wait_ready throws Error naming the batch after the deadline or an abort.
  void wait_ready(std::uint64_t batch) const;
  void release(std::uint64_t batch) const noexcept;
  void abort() const noexcept;

  // Starts a new pass: every slot free for its first batch, nothing ready.
  void reset() const noexcept;

  // The seed of batch b in a pass with `seed`.
  static std::uint64_t batch_seed(std::uint64_t seed, std::uint64_t batch) noexcept;
  // Writes batch b (the producer's work); no allocation, safe in a forked child.
  void produce(std::uint64_t seed, std::uint64_t batch) const noexcept;
  // Words of the batch in slot(batch) that differ from what produce wrote (host-side check).
  [[nodiscard]] std::uint64_t count_bad(const void* data, std::uint64_t seed,
                                        std::uint64_t batch) const noexcept;

 private:
  std::uint64_t* counter(std::size_t index) const noexcept;  // [0]: abort; then free_for, ready per slot

  std::size_t depth_;
  std::size_t batch_bytes_;
  std::chrono::milliseconds deadline_;
  std::size_t header_bytes_;
  std::size_t mapped_bytes_;
  void* base_ = nullptr;
};

// Producer workers: `count` threads or forked processes, worker w writing batches w, w + count, ... of a
// pass of `batches`. The destructor aborts the ring and joins (or waits for) every worker. Worker processes
// are watched as they run: one that dies (killed, crashed) aborts the ring at once, so the consumer stops
// waiting for its batches now, not after the ring's deadline.
class ProducerGroup {
 public:
  enum class Kind { thread, process };
  ProducerGroup(Kind kind, std::size_t count, const BatchRing& ring, std::uint64_t seed,
                std::uint64_t batches);
  ~ProducerGroup();
  ProducerGroup(const ProducerGroup&) = delete;
  ProducerGroup& operator=(const ProducerGroup&) = delete;
  ProducerGroup(ProducerGroup&&) = delete;
  ProducerGroup& operator=(ProducerGroup&&) = delete;

  // Joins every worker; throws Error when a worker process did not exit cleanly.
  void join();

 private:
  // Reaps the worker processes as they end (their wait statuses into statuses_); aborts the ring when one
  // ends other than by exit 0.
  void watch_children();

  const BatchRing& ring_;
  std::vector<std::jthread> threads_;
  std::vector<pid_t> children_;
  std::vector<int> statuses_;  // written by watcher_ only, read after it is joined
  std::jthread watcher_;
};

}  // namespace memstress::suites
