// nccl_memory: the device memory NCCL and CUDA take for themselves on each GPU, which a user loses before
// the first tensor (what nccl-tests -M reports, per phase).
//
// Note [What is measured]. Device memory is read with cudaMemGetInfo (free bytes of the whole GPU), each
// reading behind a barrier of all ranks, so no rank is still setting up while another reads; every rank
// drives its own GPU, and NCCL maps a peer's buffers without allocating on the peer. Per repetition, in
// MiB (2^20 bytes):
//   context     a second CUDA context created and destroyed (cuCtxCreate): what the runtime's primary
//               context costs before any allocation of the program;
//   comm_init   a new communicator over all ranks (ncclCommInitRankConfig; `channels` > 0 pins NCCL's
//               channel count through minCTAs = maxCTAs);
//   first_X     the first collective X on it (NCCL connects peers, and allocates their buffers for every
//               protocol, lazily: at the first collective that needs each connection);
//   comm_total  everything the communicator holds after one of each collective;
//   left_after_destroy  what ncclCommDestroy did not give back;
//   cycle_growth  (the first timed repetition only) free memory after one create-use-destroy cycle minus free
//               memory after `cycles` more: a communicator's life must leave nothing behind. More than
//               kCycleTolerance counts as a data error (exit 1), with a note.
// NCCL_BUFFSIZE, NCCL_ALGO, NCCL_PROTO and the other NCCL_* variables act as NCCL documents; the case
// notes the ones set. Under mpirun the run's own communicator lives meanwhile, so the figures are what one
// more communicator costs: a process's first live one pays more (on an H100, comm_init 388 MiB alone
// against 196 beside another).
//
// Note [What is verified]. Every first collective runs on inputs filled from (rank, index) and every
// received element is compared with its exact value on the device (kernels/collective.hpp).

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/core/cuda_check.hpp"
#include "harness/core/error.hpp"
#include "harness/dist/nccl_comm.hpp"
#include "harness/dist/world.hpp"
#include "harness/memory/backend.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "harness/memory/driver_api.hpp"
#include "harness/run/context.hpp"
#include "harness/run/workload.hpp"
#include "kernels/collective.hpp"
#include "suites/axes.hpp"
#include "suites/registry.hpp"
#include "suites/support/collectives_ops.hpp"

namespace memstress::suites {
namespace {

using kernels::Collective;
using kernels::DType;

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kCycleTolerance = 2 * kMiB;  // growth past this over the cycles fails the case
constexpr std::array<std::string_view, 6> kNcclVariables = {
    "NCCL_BUFFSIZE", "NCCL_ALGO", "NCCL_PROTO", "NCCL_NCHANNELS", "NCCL_P2P_DISABLE", "NCCL_NVLS_ENABLE"};

class NcclMemoryRun final : public CaseRun {
 public:
  explicit NcclMemoryRun(CaseContext& ctx)
      : channels_(static_cast<int>(ctx.params().integer("channels"))),
        cycles_(ctx.params().integer("cycles")),
        bytes_(ctx.params().bytes("bytes")),
        device_(ctx.device().info().ordinal),
        backend_(&ctx.device()),
        world_(&ctx.world()),
        send_(bytes_),
        recv_(bytes_) {
    if (world_->size() > 1 && ctx.nccl() == nullptr) {
      throw SkipCase("needs an NCCL communicator (a real GPU)");
    }
    if (bytes_ / sizeof(float) < static_cast<std::uint64_t>(world_->size())) {
      throw SkipCase(
          fmt::format("bytes={} is less than one float per rank on {} ranks", bytes_, world_->size()));
    }
    std::string set;
    for (const std::string_view name : kNcclVariables) {
      if (const char* value = std::getenv(std::string(name).c_str()); value != nullptr) {
        set += fmt::format("{}{}={}", set.empty() ? "" : " ", name, value);
      }
    }
    ctx.note(set.empty() ? "no NCCL_* variable that changes NCCL's memory is set" : "NCCL variables: " + set);
  }

  void iteration(CaseContext& ctx) override {
    const cuda::ScopedDevice on(device_);
    if (const std::optional<double> context = context_cost(ctx)) {
      ctx.record("context", "MiB", Better::lower, *context / kMiB);
    }
    const double before = settled_free();
    {
      std::optional<NcclComm> comm;
      const auto t0 = std::chrono::steady_clock::now();
      comm.emplace(*world_, device_, channels_);
      world_->barrier();
      const double init_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double after_init = settled_free();
      ctx.record("comm_init", "MiB", Better::lower, (before - after_init) / kMiB);
      ctx.record("comm_init_time", "ms", Better::lower, init_s * 1e3);
      double last = after_init;
      for (const std::string_view name : collective_names()) {
        const Collective c = parse_collective(name);
        run_checked(ctx, *comm, c);
        const double now = settled_free();
        ctx.record(fmt::format("first_{}", name), "MiB", Better::lower, (last - now) / kMiB);
        last = now;
      }
      ctx.record("comm_total", "MiB", Better::lower, (before - last) / kMiB);
    }
    ctx.record("left_after_destroy", "MiB", Better::lower, (before - settled_free()) / kMiB);
    if (ctx.measuring() && !cycled_ && cycles_ > 0) {
      cycled_ = true;
      cycle_check(ctx);
    }
  }

 private:
  // The device's free memory (the whole GPU's, as cudaMemGetInfo counts it).
  [[nodiscard]] double free_bytes() const { return static_cast<double>(backend_->mem_info().free); }

  // Free memory once every rank has reached this point.
  double settled_free() {
    MEMSTRESS_CUDA_TRY(cudaStreamSynchronize(stream_.get()));
    world_->barrier();
    const double free = free_bytes();
    world_->barrier();
    return free;
  }

  // Note [What is measured]: a second context's cost, the same as the primary one's before any
  // allocation. Not measured (a note, no sample) where the driver API cannot make one.
  std::optional<double> context_cost(CaseContext& ctx) {
    const double before = settled_free();
    CUcontext context = nullptr;
    const CUresult made = create_context(&context, device_);
    double with = 0;
    try {
      with = free_bytes();
    } catch (...) {
      if (made == CUDA_SUCCESS) {
        MEMSTRESS_CU_WARN(driver_api().ctx_destroy(context));
      }
      throw;
    }
    if (made != CUDA_SUCCESS) {
      if (!context_noted_) {
        context_noted_ = true;
        ctx.note(
            fmt::format("not measured: context (cuCtxCreate returned CUresult {})", static_cast<int>(made)));
      }
      return std::nullopt;
    }
    MEMSTRESS_CU_TRY(
        driver_api().ctx_destroy(context));  // also pops it: the primary context is current again
    return before - with;
  }

  // One collective on checked inputs (Note [What is verified]).
  void run_checked(CaseContext& ctx, NcclComm& comm, Collective c) {
    const auto layout = kernels::collective_layout(c, bytes_, DType::f32, comm.size(), comm.rank());
    const std::uint64_t modulus = kernels::value_modulus(c, comm.size());
    const auto salt = static_cast<std::uint64_t>(ctx.iteration());
    MEMSTRESS_CUDA_TRY(cudaMemsetAsync(recv_.data(), 0, recv_.size(), stream_.get()));
    kernels::fill_collective_input(send_.data(), DType::f32, layout.send_count, comm.rank(), salt, modulus,
                                   stream_.get());
    enqueue_collective(c, DType::f32, layout, send_.data(), recv_.data(), comm, stream_.get());
    const kernels::CollectiveCase expect{c, comm.size(), comm.rank(), layout.chunk, salt, modulus};
    checker_.enqueue(recv_.data(), DType::f32, layout.recv_count, expect, stream_.get());
    comm.wait(stream_.get(), world_->timeout(), fmt::format("nccl_memory: first {}", to_string(c)));
    const kernels::CheckResult r = checker_.result();
    ctx.verified(r.checked_words, r.bad_words);
    if (!r.ok()) {
      ctx.note(fmt::format("repetition {}: rank {}: {}: {} of {} received elements wrong, the first at {}",
                           ctx.iteration(), comm.rank(), to_string(c), r.bad_words, r.checked_words,
                           r.first_bad_word));
    }
  }

  // One communicator's life: created, one all_reduce, destroyed.
  void one_life(CaseContext& ctx) {
    NcclComm comm(*world_, device_, channels_);
    run_checked(ctx, comm, Collective::all_reduce);
  }

  void cycle_check(CaseContext& ctx) {
    one_life(ctx);
    const double first = settled_free();
    for (std::int64_t i = 0; i < cycles_; ++i) {
      one_life(ctx);
    }
    const double growth = first - settled_free();
    ctx.record("cycle_growth", "MiB", Better::lower, growth / kMiB);
    const bool grew = growth > kCycleTolerance;
    ctx.verified(1, grew ? 1 : 0);
    if (grew) {
      ctx.note(
          fmt::format("rank {}: {} communicators created and destroyed took {:.1f} MiB for good "
                      "(more than {:.0f} MiB)",
                      world_->rank(), cycles_, growth / kMiB, kCycleTolerance / kMiB));
    }
  }

  int channels_;
  std::int64_t cycles_;
  std::uint64_t bytes_;
  int device_;
  const DeviceBackend* backend_;
  World* world_;
  bool cycled_ = false;
  bool context_noted_ = false;
  cuda::Stream stream_;
  cuda::DeviceBuffer send_;  // allocated before any reading: not part of NCCL's figures
  cuda::DeviceBuffer recv_;
  kernels::CollectiveChecker checker_;
};

}  // namespace

WorkloadDef workloads::nccl_memory() {
  return {
      .name = "nccl_memory",
      .summary =
          "the device memory the CUDA context and NCCL take per GPU: a second context, a new communicator "
          "(`channels` pinned or NCCL's choice) and its first collective of each kind, in MiB, with whatever "
          "`NCCL_BUFFSIZE`/`NCCL_ALGO`/`NCCL_PROTO` is set (noted in the row); `cycles` more communicators "
          "created, used and destroyed must leave no memory behind (more than 2 MiB fails the case); every "
          "first collective's result checked on the device",
      .needs = {.real_gpu = true, .all_ranks = true, .more = "and an NCCL communicator under `mpirun`"},
      .axes = axes::nccl_memory(),  // Note [The axes in one place], suites/axes.hpp
      .headline = {"comm_total"},
      .prepare = [](CaseContext& ctx) -> std::unique_ptr<CaseRun> {
        return std::make_unique<NcclMemoryRun>(ctx);
      },
  };
}

}  // namespace memstress::suites
