// collectives: NCCL all_reduce, all_gather, reduce_scatter, broadcast, alltoall and a sendrecv ring over
// buffers from the shared caching allocator, with nccl-tests' bandwidth figures.
//
// Note [What is measured]. Three ways to time (`timing`), two of them nccl-tests' own:
//   events  (the default) In prepare, a few collectives to warm up (NCCL connects its peers lazily); then
//           per repetition `inner` collectives back to back on one stream between two CUDA events, behind
//           a short spin kernel, so the GPU time excludes the host's launch gaps; time = elapsed / inner,
//           averaged over the ranks (World::all_gather). `inner` is chosen so one sample moves at least
//           1 GiB (5 to 200 collectives).
//   host    nccl-tests' default (BenchTime): one collective waited for, a spinning barrier of all ranks
//           (World::spin_barrier: no rank is released late by a sleep), then a host
//           clock around `iters` collectives launched back to back and the wait for the last (polled
//           without sleeping, NcclComm::Poll::spin); time = elapsed / iters, averaged over the ranks. At
//           small sizes this includes each launch's host cost, which the events method hides.
//   graph   the `iters` collectives captured once per case into a CUDA graph, then timed as host but
//           launched as one graph: a graph replayed, as a program that captures its step replays it.
//   graph_each  nccl-tests' -G 1 as it does it: per repetition, in nccl-tests' order, one collective waited
//           for, a barrier, a new graph captured and instantiated, a second barrier, then its first launch
//           timed (which also uploads it). So the launch comes, as in nccl-tests, after the capture and
//           instantiation (the GPU idle meanwhile), not right after the collective waited for.
// Note [Rotation]. nccl-tests moves every collective of a timed region to the next slot of buffers of the
// sweep's largest size (-e): collective i at offset slot * (i mod (largest / slot)), where a slot is the
// larger of one rank's send and receive bytes, so that a region does not reread one cache-hot buffer.
// `rotate` does the same with its value as the largest size (`-p rotate=64M` beside nccl-tests -e 64M; 0,
// the default, keeps one slot). Only the slots a region reaches are allocated (at most `iters`, or
// `inner` with timing=events); the warm-up and the collective waited for use slot 0, and repetition r
// verifies slot r mod slots, so that every slot's addresses are checked in turn.
// In a sweep nccl-tests runs every other size between two lines of one size, so a line's slots but the
// first (which its data set-up and the collective waited for have just touched) come to it cold, out of
// L2. memstress repeats one size, so they come warm. `l2=flushed` writes over the L2 before each timed
// region (a memset of twice its size; nvbench flushes it between samples with a memset of its size), ahead
// of the collective waited for; `l2=warm`, the default, leaves it. A `rotate` below one slot (a size above
// it in a sweep) leaves one slot, which nccl-tests cannot do: the case says so in a note.
// Note [Host timing after a capture]. Once work on a communicator has been captured in a CUDA graph,
// NCCL (NCCL_GRAPH_MIXING_SUPPORT=1, its default) orders every later launch outside a graph after the
// graphs' work, with an event wait before it and an event record after it, for the communicator's life
// (NcclComm::ever_captured). That is two more CUDA calls a launch, which nccl-tests' default never makes:
// it captures nothing unless run with -G. Measured on 4 H200s (8 B - 2 MiB, host-timed): in one run order,
// turning the ordering off (NCCL_GRAPH_MIXING_SUPPORT=0) made the host cases 5.2 % faster at the median, but
// all_reduce's, timed before any capture, moved -1.8 % too, and host timing in a run with no capture at all
// was slower still (+7.6 %): one run's host timing at those sizes moves as much. A case timed outside a
// graph (host, events) on a communicator captured before says so in a note, and the side-by-side script
// times timing=host in a run of its own, as nccl-tests' default has it.
// One repetition is one nccl-tests line; the summary's p50 and p99 are over the repetitions (-n). Sizes,
// algbw and busbw as in kernels/collective_values.hpp (Note [Sizes, as nccl-tests counts them]); a size
// under one element per rank is a skip (nccl-tests prints such sizes as 0 bytes). Every wait on a stream with
// NCCL work goes through NcclComm::wait, with the run's --timeout (World::timeout), never
// cudaStreamSynchronize: a dead or hung peer ends the case with an error instead of a hang.
//
// Note [Where the buffers come from]. From the shared caching allocator (buffers=allocator, the point of
// the workload), or from ncclMemAlloc (buffers=ncclmem), as nccl-tests has allocated them since NCCL 2.19.
// The difference shows in a CUDA graph: NCCL registers ncclMemAlloc memory captured in a graph for
// zero-copy transfers (NCCL_GRAPH_REGISTER), which plain cudaMalloc memory does not get, so nccl-tests -G
// figures are to be set beside buffers=ncclmem timing=graph_each (and timing=graph).
//
// Note [The reference]. With pressure=none each repetition also times the same collectives between plain
// cudaMalloc buffers (cuda::DeviceBuffer): `ref_busbw`, and `vs_ref` = busbw / ref_busbw sample by sample
// (taken as the algbw ratio: the same, bus factors being equal, and defined on one rank, where busbw is 0).
// With pressure=churn each repetition times the collectives twice on the same buffers: quiet
// (`quiet_busbw`), then while a Churn (suites/support/churn.hpp) works the same GPU through the shared
// allocators
// (`busbw`); `slowdown` = quiet / under pressure.
//
// Note [What is verified]. After the timed loops (whose in-place reductions pile sums on sums), every
// repetition clears the receive buffer, fills the input with values from (rank, index, repetition)
// (kernels/collective_values.hpp), runs the collective once more and compares every received element with
// its exact expected value on the device.
//
// Note [The communicator]. The run passes one over all ranks (ctx.nccl()). A run of one process without
// one (a real GPU but no communicator from the harness) gets a communicator of one rank, made for the case:
// nccl-tests runs on one GPU too. Several ranks without a communicator cannot measure anything: an error.

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "harness/alloc/allocator.hpp"
#include "harness/core/cuda_check.hpp"
#include "harness/core/error.hpp"
#include "harness/dist/nccl_buffer.hpp"
#include "harness/dist/nccl_comm.hpp"
#include "harness/dist/world.hpp"
#include "harness/memory/backend.hpp"
#include "harness/memory/cuda_graph.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "harness/run/context.hpp"
#include "harness/run/workload.hpp"
#include "kernels/collective.hpp"
#include "kernels/pattern.hpp"
#include "suites/registry.hpp"
#include "suites/support/blocks.hpp"
#include "suites/support/churn.hpp"
#include "suites/support/collectives_ops.hpp"

namespace memstress::suites {
namespace {

using kernels::Collective;
using kernels::DType;

constexpr std::uint64_t kSpinNs = 20'000;
constexpr std::uint64_t kSampleBytes = 1ULL << 30U;  // each sample moves at least this much
constexpr std::uint64_t kMinInner = 5;
constexpr std::uint64_t kMaxInner = 200;
constexpr int kWarmup = 3;
constexpr std::int64_t kDefaultIters = 20;  // nccl-tests' -n

enum class Timing { events, host, graph, graph_each };

Timing parse_timing(std::string_view name) {
  if (name == "graph_each") {
    return Timing::graph_each;
  }
  return name == "host" ? Timing::host : name == "graph" ? Timing::graph : Timing::events;
}

// The L2 cache's size on `device`.
std::size_t l2_bytes(int device) {
  int bytes = 0;
  MEMSTRESS_CUDA_TRY(cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, device));
  return static_cast<std::size_t>(std::max(bytes, 1));
}

// Whether NCCL orders launches outside a graph after captured work (its default; Note [Host timing after a
// capture]), as the environment says: a setting in NCCL's own configuration file is not seen here.
bool graph_mixing() {
  const char* value = std::getenv("NCCL_GRAPH_MIXING_SUPPORT");  // NOLINT(concurrency-mt-unsafe): read-only
  return value == nullptr || std::string_view(value) != "0";
}

// A block's address and size.
struct Span {
  void* data = nullptr;
  std::size_t bytes = 0;
};

// A send and a receive pointer (the same block when in place).
struct Buffers {
  void* send = nullptr;
  void* recv = nullptr;
};

class CollectivesRun final : public CaseRun {
 public:
  explicit CollectivesRun(CaseContext& ctx)
      : collective_(parse_collective(ctx.params().text("collective"))),
        dtype_(parse_dtype(ctx.params().text("dtype"))),
        in_place_(ctx.params().text("place") == "in"),
        churn_(ctx.params().text("pressure") == "churn"),
        timing_(parse_timing(ctx.params().text("timing"))),
        nccl_buffers_(ctx.params().text("buffers") == "ncclmem"),
        iters_(static_cast<std::uint64_t>(ctx.params().integer("iters"))),
        bytes_(ctx.params().bytes("bytes")),
        rotate_(ctx.params().bytes("rotate")),
        flush_l2_(ctx.params().text("l2") == "flushed"),
        device_(ctx.device().info().ordinal),
        world_(&ctx.world()),
        allocator_(&ctx.allocator()),
        host_(churn_ ? &ctx.host_allocator() : nullptr) {
    const cuda::ScopedDevice on(device_);
    comm_ = ctx.nccl();
    if (comm_ == nullptr) {
      if (world_->size() != 1) {
        throw SkipCase("needs an NCCL communicator (a real GPU)");
      }
      own_comm_.emplace(*world_, device_);  // Note [The communicator]
      comm_ = &*own_comm_;
    }
    // Note [Host timing after a capture].
    const bool outside_graph = timing_ == Timing::host || timing_ == Timing::events;
    if (outside_graph && comm_->ever_captured() && graph_mixing()) {
      ctx.note(fmt::format(
          "timing={} on a communicator captured in a CUDA graph earlier in the run: NCCL orders each launch "
          "after the graphs' work (NCCL_GRAPH_MIXING_SUPPORT=1), which nccl-tests' default does not; time it "
          "in a run without graph cases before it",
          ctx.params().text("timing")));
    }
    layout_ = kernels::collective_layout(collective_, bytes_, dtype_, comm_->size(), comm_->rank());
    if (layout_.send_count == 0 || layout_.recv_count == 0) {
      throw SkipCase(fmt::format("bytes={} is less than one {}-byte element per rank on {} ranks", bytes_,
                                 kernels::dtype_size(dtype_), comm_->size()));
    }
    size_bytes_ = static_cast<double>(layout_.size_count() * kernels::dtype_size(dtype_));
    inner_ =
        std::clamp<std::uint64_t>(kSampleBytes / std::max<std::uint64_t>(1, bytes_), kMinInner, kMaxInner);
    slot_bytes_ = layout_.size_count() * element();  // the larger of send and receive: a block in place
    const std::uint64_t per_region = timing_ == Timing::events ? inner_ : iters_;
    slots_ = std::clamp<std::uint64_t>(rotate_ / slot_bytes_, 1, per_region);  // Note [Rotation]
    if (rotate_ > 0 && rotate_ < slot_bytes_) {
      ctx.note(fmt::format("rotate={} is less than one slot of {} bytes: one slot, not rotated",
                           ctx.params().text("rotate"), slot_bytes_));
    }
    what_ = fmt::format("{} {} bytes={} {}", to_string(collective_), ctx.params().text("dtype"), bytes_,
                        in_place_ ? "in place" : "out of place");
    make_buffers();
    if (flush_l2_) {
      flush_ = cuda::DeviceBuffer(2 * l2_bytes(device_));  // Note [Rotation]
    }
    for (int i = 0; i < kWarmup; ++i) {
      enqueue(mine_);
      if (!churn_) {
        enqueue(ref_);
      }
    }
    wait(what_ + " (warm-up)");
    if (timing_ == Timing::graph) {
      mine_graph_ = capture(mine_);
      if (!churn_) {
        ref_graph_ = capture(ref_);
      }
    }
  }

  // Nothing is freed under NCCL work still in flight (after an exception between an enqueue and its wait):
  // wait for it first, or abort the communicator at the deadline.
  ~CollectivesRun() override {
    if (comm_->aborted()) {
      return;
    }
    try {
      wait(what_ + " (end of case)");
    } catch (const std::exception& e) {
      detail::report_free_failure(e.what());
    }
  }
  CollectivesRun(const CollectivesRun&) = delete;
  CollectivesRun& operator=(const CollectivesRun&) = delete;
  CollectivesRun(CollectivesRun&&) = delete;
  CollectivesRun& operator=(CollectivesRun&&) = delete;

  void iteration(CaseContext& ctx) override {
    const cuda::ScopedDevice on(device_);
    const double quiet = timed(mine_, mine_graph_);
    const Bandwidth bw = churn_ ? under_pressure(ctx) : bandwidth(collective_, size_bytes_, quiet, ranks());
    ctx.record("busbw", "GB/s", Better::higher, bw.busbw);
    ctx.record("algbw", "GB/s", Better::higher, bw.algbw);
    if (churn_) {
      const Bandwidth q = bandwidth(collective_, size_bytes_, quiet, ranks());
      ctx.record("quiet_busbw", "GB/s", Better::higher, q.busbw);
      ctx.record("slowdown", "ratio", Better::lower, q.algbw / bw.algbw);  // = the busbw ratio
    } else {
      ctx.record("time", "us", Better::lower, quiet * 1e6);
      const Bandwidth ref = bandwidth(collective_, size_bytes_, timed(ref_, ref_graph_), ranks());
      ctx.record("ref_busbw", "GB/s", Better::higher, ref.busbw);
      ctx.record("vs_ref", "ratio", Better::higher, bw.algbw / ref.algbw);  // = the busbw ratio
    }
    verify(ctx);
  }

 private:
  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_.get(); }
  [[nodiscard]] int ranks() const noexcept { return comm_->size(); }
  [[nodiscard]] std::uint64_t element() const noexcept { return kernels::dtype_size(dtype_); }

  // The two pointers within one block (in place) or two blocks, as NCCL's in-place rules have them.
  [[nodiscard]] Buffers place(void* send_block, void* recv_block) const {
    if (!in_place_) {
      return {send_block, recv_block};
    }
    auto* base = static_cast<unsigned char*>(recv_block);
    const std::uint64_t offset = layout_.in_place_offset * element();
    if (collective_ == Collective::all_gather) {
      return {base + offset, base};
    }
    if (collective_ == Collective::reduce_scatter) {
      return {base, base + offset};
    }
    return {base, base};
  }

  void make_buffers() {
    const std::uint64_t rest = (slots_ - 1) * slot_bytes_;  // Note [Rotation]
    const std::uint64_t send_bytes = rest + layout_.send_count * element();
    const std::uint64_t recv_bytes = rest + layout_.recv_count * element();
    const std::uint64_t block_bytes = rest + layout_.size_count() * element();
    const StreamRef s = StreamRef::from(stream());
    if (nccl_buffers_) {  // Note [Where the buffers come from]
      nccl_recv_ = NcclBuffer(in_place_ ? block_bytes : recv_bytes);
      nccl_send_ = in_place_ ? NcclBuffer() : NcclBuffer(send_bytes);
      recv_ = {nccl_recv_.data(), nccl_recv_.size()};
      send_ = {nccl_send_.data(), nccl_send_.size()};
    } else {
      recv_block_ = DeviceBlock(*allocator_, in_place_ ? block_bytes : recv_bytes, s);
      send_block_ = in_place_ ? DeviceBlock() : DeviceBlock(*allocator_, send_bytes, s);
      recv_ = {recv_block_.get(), recv_block_.size()};
      send_ = {send_block_.get(), send_block_.size()};
    }
    mine_ = in_place_ ? place(recv_.data, recv_.data) : place(send_.data, recv_.data);
    clear(send_.data, send_.bytes);
    clear(recv_.data, recv_.bytes);
    if (churn_) {
      return;  // no reference under pressure (Note [The reference])
    }
    if (in_place_) {
      ref_recv_ = cuda::DeviceBuffer(block_bytes);
      ref_ = place(ref_recv_.data(), ref_recv_.data());
    } else {
      ref_send_ = cuda::DeviceBuffer(send_bytes);
      ref_recv_ = cuda::DeviceBuffer(recv_bytes);
      ref_ = place(ref_send_.data(), ref_recv_.data());
    }
    clear(ref_send_.data(), ref_send_.size());
    clear(ref_recv_.data(), ref_recv_.size());
  }

  // Defined contents for the timed loops (NaN or denormal inputs would be no fair test).
  void clear(void* p, std::size_t bytes) const {
    if (p != nullptr) {
      MEMSTRESS_CUDA_TRY(cudaMemsetAsync(p, 0, bytes, stream()));
    }
  }

  // The buffers of the `i`th collective of a timed region: its slot (Note [Rotation]).
  [[nodiscard]] Buffers in_slot(const Buffers& b, std::uint64_t i) const {
    const std::uint64_t shift = slot_bytes_ * (i % slots_);
    return {static_cast<unsigned char*>(b.send) + shift, static_cast<unsigned char*>(b.recv) + shift};
  }

  void enqueue(const Buffers& b, std::uint64_t i = 0) const {
    const Buffers at = in_slot(b, i);
    enqueue_collective(collective_, dtype_, layout_, at.send, at.recv, *comm_, stream());
  }

  // Every wait for NCCL work: on a failure the graphs go first, then the communicator is aborted
  // (ncclCommAbort waits for the graphs that reference the communicator to be destroyed).
  void wait(const std::string& what, NcclComm::Poll poll = NcclComm::Poll::relaxed) {
    try {
      comm_->wait(stream(), world_->timeout(), what, poll, NcclComm::OnFailure::leave);
    } catch (const DistError&) {
      mine_graph_ = {};
      ref_graph_ = {};
      comm_->abort();
      throw;
    }
  }

  // Note [What is measured] (graph): `iters` collectives in one graph.
  cuda::CapturedGraph capture(const Buffers& b) {
    comm_->captured();  // Note [Host timing after a capture]
    return {stream(), [&] {
              for (std::uint64_t i = 0; i < iters_; ++i) {
                enqueue(b, i);
              }
            }};
  }

  // Note [What is measured]: seconds per collective, averaged over the ranks.
  double timed(const Buffers& b, cuda::CapturedGraph& graph) {
    if (flush_l2_) {  // Note [Rotation]
      MEMSTRESS_CUDA_TRY(cudaMemsetAsync(flush_.data(), 0, flush_.size(), stream()));
    }
    const double local = timing_ == Timing::events ? timed_by_events(b) : timed_by_host(b, graph);
    const std::vector<double> all = world_->all_gather(local);
    return std::accumulate(all.begin(), all.end(), 0.0) / static_cast<double>(all.size());
  }

  // Note [What is measured] (host, graph, graph_each): as nccl-tests' BenchTime. With graph_each, `graph`
  // is captured anew between the barriers (a member, so that a failed wait drops it before the
  // communicator is aborted).
  double timed_by_host(const Buffers& b, cuda::CapturedGraph& graph) {
    enqueue(b);
    wait(what_ + " (sync)", NcclComm::Poll::spin);
    world_->spin_barrier();
    if (timing_ == Timing::graph_each) {
      graph = {};  // the last repetition's first
      graph = capture(b);
      world_->spin_barrier();
    }
    const auto start = std::chrono::steady_clock::now();
    if (timing_ == Timing::graph || timing_ == Timing::graph_each) {
      graph.launch(stream());
    } else {
      for (std::uint64_t i = 0; i < iters_; ++i) {
        enqueue(b, i);
      }
    }
    wait(what_, NcclComm::Poll::spin);
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    return elapsed.count() / static_cast<double>(iters_);
  }

  double timed_by_events(const Buffers& b) {
    kernels::spin(kSpinNs, stream());
    start_.record(stream());
    for (std::uint64_t i = 0; i < inner_; ++i) {
      enqueue(b, i);
    }
    stop_.record(stream());
    wait(what_);
    return static_cast<double>(cuda::Event::elapsed_ms(start_, stop_)) / 1e3 / static_cast<double>(inner_);
  }

  Bandwidth under_pressure(const CaseContext& ctx) {
    Churn churn(*allocator_, *host_, device_, ctx.seed() + static_cast<std::uint64_t>(ctx.iteration()));
    const double seconds = timed(mine_, mine_graph_);
    const std::uint64_t steps = churn.stop();
    if (steps == 0) {
      throw Error(ExitCode::check_failed, "pressure=churn: the churn thread made no progress");
    }
    return bandwidth(collective_, size_bytes_, seconds, ranks());
  }

  // Note [What is verified].
  void verify(CaseContext& ctx) {
    const auto salt = static_cast<std::uint64_t>(ctx.iteration());  // the same on every rank
    const std::uint64_t modulus = kernels::value_modulus(collective_, ranks());
    const Buffers at = in_slot(mine_, salt);  // Note [Rotation]
    MEMSTRESS_CUDA_TRY(cudaMemsetAsync(recv_.data, 0, recv_.bytes, stream()));
    kernels::fill_collective_input(at.send, dtype_, layout_.send_count, comm_->rank(), salt, modulus,
                                   stream());
    enqueue(at);
    const kernels::CollectiveCase expect{collective_, ranks(), comm_->rank(), layout_.chunk, salt, modulus};
    checker_.enqueue(at.recv, dtype_, layout_.recv_count, expect, stream());
    wait(what_ + " (verification)");
    const kernels::CheckResult r = checker_.result();
    ctx.verified(r.checked_words, r.bad_words);
    if (!r.ok()) {
      ctx.note(fmt::format("repetition {}: rank {}: {} of {} received elements wrong, the first at index {}",
                           ctx.iteration(), comm_->rank(), r.bad_words, r.checked_words, r.first_bad_word));
    }
  }

  Collective collective_;
  DType dtype_;
  bool in_place_;
  bool churn_;
  Timing timing_;
  bool nccl_buffers_;
  std::uint64_t iters_;
  std::uint64_t bytes_;
  std::uint64_t rotate_;
  std::uint64_t slot_bytes_ = 0;  // Note [Rotation]
  std::uint64_t slots_ = 1;
  bool flush_l2_;
  int device_;
  World* world_;
  Allocator* allocator_;
  PinnedHostAllocator* host_;
  std::optional<NcclComm> own_comm_;
  NcclComm* comm_ = nullptr;
  kernels::CollectiveLayout layout_;
  double size_bytes_ = 0;
  std::uint64_t inner_ = kMinInner;
  std::string what_;
  cuda::Stream stream_;
  cuda::Event start_;
  cuda::Event stop_;
  // Declared after the stream: freed (stream-ordered) before it goes.
  DeviceBlock send_block_;  // out of place only
  DeviceBlock recv_block_;  // in place: the one block
  NcclBuffer nccl_send_;    // the same, with buffers=ncclmem
  NcclBuffer nccl_recv_;
  Span send_;  // whichever of the two holds them
  Span recv_;
  cuda::DeviceBuffer ref_send_;
  cuda::DeviceBuffer ref_recv_;
  cuda::DeviceBuffer flush_;  // l2=flushed only
  Buffers mine_;
  Buffers ref_;
  cuda::CapturedGraph mine_graph_;  // timing=graph and graph_each only
  cuda::CapturedGraph ref_graph_;
  kernels::CollectiveChecker checker_;
};

std::vector<std::string> strings(std::span<const std::string_view> names) {
  return {names.begin(), names.end()};
}

}  // namespace

WorkloadDef workloads::collectives() {
  return {
      .name = "collectives",
      .summary =
          "NCCL all_reduce (sum), all_gather, reduce_scatter (sum), broadcast (root 0), alltoall and a "
          "sendrecv ring over buffers from the shared allocator; float, half, bfloat16, int32, double; in "
          "place and out of place; sizes by `-b/-e/-f` as nccl-tests counts them; time averaged over ranks "
          "(timed four ways, `timing=events` the GPU's time, `host` nccl-tests' default, `graph` a graph "
          "captured once and replayed, `graph_each` nccl-tests' `-G 1` with a new graph each repetition; "
          "buffers from the shared allocator or, `buffers=ncclmem`, from `ncclMemAlloc` as nccl-tests has "
          "them; `rotate=SIZE` moves each collective of a region to the next slot of buffers that large, as "
          "nccl-tests does within its `-e`, and `l2=flushed` writes over the L2 before each region: "
          "docs/benchmarks.md), algbw and busbw by nccl-tests' formulas, `vs_ref` against the same "
          "collectives on plain `cudaMalloc` buffers; `pressure=churn`: busbw while another thread churns "
          "allocations and H2D copies on the same GPU, `quiet_busbw` and `slowdown`; every result element "
          "checked on the device",
      .needs = {.real_gpu = true,
                .all_ranks = true,
                .more = "and an NCCL communicator; one process alone makes a one-rank one"},
      .axes =
          {
              {.name = "collective",
               .type = ParamType::choice,
               .defaults = strings(collective_names()),
               .choices = strings(collective_names()),
               .help = "the collective (sum for reductions; broadcast from rank 0; sendrecv: to rank+1, from "
                       "rank-1)"},
              {.name = "dtype",
               .type = ParamType::choice,
               .defaults = {"float"},
               .full_defaults = strings(dtype_names()),
               .choices = strings(dtype_names()),
               .help = "element type"},
              {.name = "place",
               .type = ParamType::choice,
               .defaults = {"out"},
               .full_defaults = {"out", "in"},
               .choices = {"out", "in"},
               .help = "out of place, or in place (not for alltoall and sendrecv)"},
              {.name = "pressure",
               .type = ParamType::choice,
               .defaults = {"none", "churn"},
               .choices = {"none", "churn"},
               .help = "none, or churn: another thread allocates, fills and frees blocks and copies "
                       "host-to-device on the same GPU meanwhile"},
              {.name = "timing",
               .type = ParamType::choice,
               .defaults = {"events"},
               .choices = {"events", "host", "graph", "graph_each"},
               .help = "events: GPU time between CUDA events; host: nccl-tests' default (a host clock around "
                       "iters launches); graph: the iters collectives as one CUDA graph, captured once and "
                       "replayed; graph_each: nccl-tests' -G 1 (a new graph each repetition, its first "
                       "launch timed)"},
              {.name = "iters",
               .type = ParamType::integer,
               .defaults = {"20"},
               .minimum = 1,
               .maximum = 10000,
               .help = "collectives per timed region with timing=host, graph or graph_each (nccl-tests' -n); "
                       "timing=events chooses its own and takes only the default"},
              {.name = "buffers",
               .type = ParamType::choice,
               .defaults = {"allocator"},
               .choices = {"allocator", "ncclmem"},
               .help = "where the buffers come from: the shared allocator, or ncclMemAlloc as nccl-tests "
                       "allocates them"},
              {.name = "bytes",
               .type = ParamType::bytes,
               .defaults = {"256M"},
               .full_defaults = {"1M", "4M", "16M", "64M", "256M", "1G", "4G"},
               .minimum = 1,
               .help = "nccl-tests' size: the larger of one rank's send and receive buffers"},
              {.name = "rotate",
               .type = ParamType::bytes,
               .defaults = {"0"},
               .minimum = 0,
               .help = "move each collective of a timed region to the next slot of buffers this large, as "
                       "nccl-tests does with its -e (0: one buffer)"},
              {.name = "l2",
               .type = ParamType::choice,
               .defaults = {"warm"},
               .choices = {"warm", "flushed"},
               .help = "warm: a timed region finds the L2 as the last left it; flushed: written over first, "
                       "as nccl-tests' slots come to a line in a sweep of many sizes"},
          },
      .headline = {"busbw"},
      .measures_bandwidth = true,
      .applies = [](const ParamSet& p) -> bool {
        const bool placed = p.text("place") == "out" || has_in_place(parse_collective(p.text("collective")));
        const bool counted = p.text("timing") != "events" || p.integer("iters") == kDefaultIters;
        return placed && counted;  // events mode ignores iters: one case, not one per value
      },
      .prepare = [](CaseContext& ctx) -> std::unique_ptr<CaseRun> {
        return std::make_unique<CollectivesRun>(ctx);
      },
  };
}

}  // namespace memstress::suites
