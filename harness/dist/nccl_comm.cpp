#include "harness/dist/nccl_comm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <thread>
#include <utility>

#include "harness/core/cuda_check.hpp"
#include "harness/core/nccl_check.hpp"
#include "harness/dist/world.hpp"

namespace memstress {

NcclComm::NcclComm(World& world, int device, int channels)
    : rank_(world.rank()), size_(world.size()), device_(device) {
  ncclUniqueId id{};
  if (rank_ == 0) {
    MEMSTRESS_NCCL_TRY(ncclGetUniqueId(&id));
  }
  world.broadcast(std::as_writable_bytes(std::span<ncclUniqueId, 1>(&id, 1)), 0);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  if (channels > 0) {
    config.minCTAs = channels;
    config.maxCTAs = channels;
  }
  MEMSTRESS_NCCL_TRY(ncclCommInitRankConfig(&comm_, size_, id, rank_, &config));
}

NcclComm::~NcclComm() {
  if (comm_ == nullptr) {
    return;
  }
  if (aborted_) {
    return;  // ncclCommAbort already freed it
  }
  MEMSTRESS_NCCL_WARN(ncclCommFinalize(comm_));
  MEMSTRESS_NCCL_WARN(ncclCommDestroy(comm_));
}

NcclComm::NcclComm(NcclComm&& other) noexcept
    : comm_(std::exchange(other.comm_, nullptr)),
      rank_(other.rank_),
      size_(other.size_),
      device_(other.device_),
      aborted_(other.aborted_),
      ever_captured_(other.ever_captured_) {}

NcclComm& NcclComm::operator=(NcclComm&& other) noexcept {
  if (this != &other) {
    NcclComm gone(std::move(*this));
    comm_ = std::exchange(other.comm_, nullptr);
    rank_ = other.rank_;
    size_ = other.size_;
    device_ = other.device_;
    aborted_ = other.aborted_;
    ever_captured_ = other.ever_captured_;
  }
  return *this;
}

void NcclComm::abort() noexcept {
  if (comm_ != nullptr && !aborted_) {
    aborted_ = true;
    MEMSTRESS_NCCL_WARN(ncclCommAbort(comm_));
  }
}

void NcclComm::wait(cudaStream_t stream, std::chrono::milliseconds timeout, const std::string& what,
                    Poll poll, OnFailure on_failure) {
  if (aborted_) {
    throw DistError(fmt::format("rank {}: {}: the NCCL communicator was aborted earlier", rank_, what));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(1);
  for (;;) {
    const cudaError_t state = cudaStreamQuery(stream);
    if (state == cudaSuccess) {
      return;
    }
    if (state != cudaErrorNotReady) {
      MEMSTRESS_CUDA_TRY(state);
    }
    ncclResult_t async = ncclSuccess;
    MEMSTRESS_NCCL_TRY(ncclCommGetAsyncError(comm_, &async));
    if (async != ncclSuccess && async != ncclInProgress) {
      const std::string detail = ncclGetLastError(comm_);  // before abort frees the communicator
      if (on_failure == OnFailure::abort) {
        abort();
      }
      throw DistError(fmt::format("rank {}: {}: NCCL reported {} ({}); the communicator was aborted", rank_,
                                  what, ncclGetErrorString(async), detail));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      if (on_failure == OnFailure::abort) {
        abort();
      }
      throw DistError(
          fmt::format("rank {}: {}: not finished after {} s (a peer rank failed or hangs); the "
                      "NCCL communicator was aborted",
                      rank_, what, std::chrono::duration<double>(timeout).count()));
    }
    if (poll == Poll::relaxed) {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(200));
    }
  }
}

}  // namespace memstress
