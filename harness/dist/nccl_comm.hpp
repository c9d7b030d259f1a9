#pragma once

// One NCCL communicator over all ranks of a World, on the current CUDA device (RAII, move-only).
//
// Design note: NCCL reports failures of a peer (a dead rank, a broken link) asynchronously; a blocked
// collective would otherwise hang the job forever. So nothing here waits with cudaStreamSynchronize:
// wait() polls the stream and ncclCommGetAsyncError until a deadline, and on an error or at the deadline
// aborts the communicator (ncclCommAbort, which unblocks the kernels) and throws DistError naming the
// rank and what it was waiting for. After that the communicator is unusable (aborted() is true).

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <string>

#include "harness/dist/dist_error.hpp"

namespace memstress {

class World;

class NcclComm {
 public:
  // How wait() polls: `relaxed` sleeps between polls (from 1 us, doubling to 200 us) to leave the CPU to
  // other threads; `spin` polls without sleeping, as nccl-tests does, for host-timed regions whose end a
  // sleep would overshoot by up to 200 us.
  enum class Poll : bool { relaxed, spin };
  // What wait() does on an error or at the deadline before it throws: abort the communicator, or leave that
  // to the caller (which must first drop the CUDA graphs that hold the communicator: ncclCommAbort waits for
  // every graph that references it to be destroyed).
  enum class OnFailure : bool { abort, leave };

  // Collective over `world`: rank 0 makes the unique id and broadcasts it. `device` must be current.
  // `channels` > 0 pins NCCL's channel count (ncclConfig_t minCTAs = maxCTAs); 0 leaves NCCL's choice.
  NcclComm(World& world, int device, int channels = 0);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  NcclComm(NcclComm&& other) noexcept;
  NcclComm& operator=(NcclComm&& other) noexcept;

  [[nodiscard]] ncclComm_t get() const noexcept { return comm_; }
  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int size() const noexcept { return size_; }
  [[nodiscard]] int device() const noexcept { return device_; }
  [[nodiscard]] bool aborted() const noexcept { return aborted_; }
  // Whether work on this communicator has been captured in a CUDA graph. From then on NCCL (with its
  // default NCCL_GRAPH_MIXING_SUPPORT=1) orders each launch outside a graph after the graphs' work: an
  // event wait before it and an event record after it, for the communicator's life. The capturer says so.
  [[nodiscard]] bool ever_captured() const noexcept { return ever_captured_; }
  void captured() noexcept { ever_captured_ = true; }

  // Waits until the work queued on `stream` so far has finished; throws DistError (after aborting the
  // communicator) on an asynchronous NCCL error or when `timeout` passes first. `what` names the wait in
  // the message, e.g. "all_reduce 256M".
  void wait(cudaStream_t stream, std::chrono::milliseconds timeout, const std::string& what,
            Poll poll = Poll::relaxed, OnFailure on_failure = OnFailure::abort);

  // Aborts the communicator (idempotent): outstanding collectives return, the communicator is dead.
  void abort() noexcept;

 private:
  ncclComm_t comm_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
  int device_ = 0;
  bool aborted_ = false;
  bool ever_captured_ = false;
};

}  // namespace memstress
