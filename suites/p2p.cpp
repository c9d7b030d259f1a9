// p2p: the peer copy bandwidth matrix between the GPUs of a node, as nvbandwidth measures it.
//
// Note [Who measures]. The matrix is a property of the node, not of a rank: the process on local rank 0
// opens every visible GPU itself, enables peer access between them (PeerAccess, undone at the end) and
// measures every ordered pair one at a time. Other ranks of the node have nothing to add (SkipCase: a skip
// row that says so); nor has a process that sees one GPU. The
// buffers on the process's own device come from the shared allocator; those on the other GPUs are plain
// cudaMalloc (cuda::DeviceBuffer, RAII), since the shared allocator serves one device.
//
// Note [What is measured]. For a pair src->dst, `bytes` from a buffer on src to a buffer on dst, `inner`
// times back to back between two events behind a spin kernel (inner: at least 1 GiB a sample, at most
// 64 copies). engine=ce: cudaMemcpyPeerAsync; engine=sm: a copy kernel of 16-byte loads and stores through
// the peer mapping. access=write: the source GPU pushes (its stream issues the copy, its SMs store into
// the peer); access=read: the destination pulls. direction=bidir copies src->dst and dst->src at once and
// counts both (one figure per unordered pair). Metrics per pair: `GB/s 0->1` (uni), `GB/s 0<->1` (bidir),
// and `GB/s min`, the slowest pair of the sample (what acceptance checks). GB/s = 1e9 bytes/s.
//
// `peer_refused` counts the ordered pairs the driver refused peer access (Note [Refused peers]).
//
// Note [Latency]. measure=latency: a pointer chase (kernels/chase.hpp) through a chain of `bytes` in the
// memory of GPU j, followed by one thread on GPU i: `latency_us i->j` = time / hops, for every pair and
// for each GPU's own memory (i->i, the local figure to compare with), and `latency_us max`. Only SM loads
// can chase, so the other axes have one value there (engine=sm, access=read, direction=uni). The address
// the chase ends at is checked against the chain's arithmetic.
//
// Note [What is verified]. Every source holds the random pattern of its own GPU's seed; before each pair the
// destinations are cleared, and after it every destination word is compared on its own GPU with the
// pattern of the GPU it came from (a copy from the wrong GPU is caught too).

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/alloc/allocator.hpp"
#include "harness/core/cuda_check.hpp"
#include "harness/core/error.hpp"
#include "harness/core/units.hpp"
#include "harness/dist/world.hpp"
#include "harness/memory/backend.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "harness/run/context.hpp"
#include "harness/run/workload.hpp"
#include "harness/stats/summary.hpp"
#include "kernels/chase.hpp"
#include "kernels/copy.hpp"
#include "kernels/pattern.hpp"
#include "suites/registry.hpp"
#include "suites/support/blocks.hpp"
#include "suites/support/peer_access.hpp"

namespace memstress::suites {
namespace {

constexpr std::uint64_t kSpinNs = 50'000;
constexpr std::uint64_t kSampleBytes = 1ULL << 30U;
constexpr std::uint64_t kMaxInner = 64;
constexpr kernels::Pattern kPattern = kernels::Pattern::random;
constexpr std::uint64_t kHops = 20'000;
constexpr std::uint64_t kWarmHops = 1'000;

// One GPU's part: its stream, events, source and destination, and its check counters, all made with the
// GPU current.
struct Gpu {
  Gpu(int ordinal, std::uint64_t bytes, Allocator* shared) : device(ordinal) {
    const cuda::ScopedDevice on(device);
    stream.emplace();
    start.emplace();
    stop.emplace();
    join.emplace(cuda::Event::Timing::disabled);
    tally.emplace();
    end = cuda::DeviceBuffer(sizeof(std::uint64_t));
    if (shared != nullptr) {
      own_src = DeviceBlock(*shared, bytes, StreamRef::from(stream->get()));
      own_dst = DeviceBlock(*shared, bytes, StreamRef::from(stream->get()));
      src = own_src.get();
      dst = own_dst.get();
    } else {
      plain_src = cuda::DeviceBuffer(bytes);
      plain_dst = cuda::DeviceBuffer(bytes);
      src = plain_src.data();
      dst = plain_dst.data();
    }
  }
  [[nodiscard]] cudaStream_t s() const noexcept { return stream->get(); }

  int device;
  // Optional only to be made under ScopedDevice in the body; always present afterwards.
  std::optional<cuda::Stream> stream;
  std::optional<cuda::Event> start;
  std::optional<cuda::Event> stop;
  std::optional<cuda::Event> join;
  std::optional<kernels::CheckTally> tally;
  DeviceBlock own_src;  // on the process's own device: the shared allocator
  DeviceBlock own_dst;
  cuda::DeviceBuffer plain_src;  // on the other GPUs: plain cudaMalloc (Note [Who measures])
  cuda::DeviceBuffer plain_dst;
  cuda::DeviceBuffer end;  // where a chase run on this GPU ends
  void* src = nullptr;
  void* dst = nullptr;
};

// One copy direction of a pair: from `from`'s source into `to`'s destination, issued by `by`.
struct Leg {
  Gpu* from = nullptr;
  Gpu* to = nullptr;
  Gpu* by = nullptr;
};

class P2pRun final : public CaseRun {
 public:
  explicit P2pRun(CaseContext& ctx)
      : latency_(ctx.params().text("measure") == "latency"),
        sm_(ctx.params().text("engine") == "sm"),
        read_(ctx.params().text("access") == "read"),
        bidir_(ctx.params().text("direction") == "bidir"),
        bytes_(ctx.params().bytes("bytes")),
        inner_(std::clamp<std::uint64_t>(kSampleBytes / std::max<std::uint64_t>(1, bytes_), 1, kMaxInner)),
        seed_(ctx.seed()) {
    if (ctx.world().host_rank() != 0) {
      throw SkipCase(
          fmt::format("p2p: the host's peer matrix is measured by its first rank alone (this is its rank {})",
                      ctx.world().host_rank()));
    }
    const int count = cuda::device_count();
    if (count < 2) {
      throw SkipCase(fmt::format("p2p: needs 2 or more visible GPUs (found {})", count));
    }
    const int own = ctx.device().info().ordinal;
    std::vector<int> devices;
    devices.reserve(static_cast<std::size_t>(count));
    for (int d = 0; d < count; ++d) {
      devices.push_back(d);
    }
    peers_.emplace(devices);
    gpus_.reserve(devices.size());
    for (const int d : devices) {
      gpus_.push_back(std::make_unique<Gpu>(d, bytes_, d == own ? &ctx.allocator() : nullptr));
    }
    for (const auto& g : gpus_) {
      const cuda::ScopedDevice on(g->device);
      kernels::fill(g->src, bytes_, kPattern, source_seed(g->device), g->s());
    }
    for (const auto& g : gpus_) {
      g->stream->synchronize();
    }
  }

  void iteration(CaseContext& ctx) override {
    if (latency_) {
      latencies(ctx);
      return;
    }
    double slowest = std::numeric_limits<double>::infinity();
    for (const auto& a : gpus_) {
      for (const auto& b : gpus_) {
        if (a == b || (bidir_ && a->device > b->device)) {
          continue;
        }
        if (sm_ && !(peers_->can_access(a->device, b->device) && peers_->can_access(b->device, a->device))) {
          if (ctx.iteration() == 0) {
            ctx.note(fmt::format("GPUs {} and {}: no peer access, no SM copy", a->device, b->device));
          }
          continue;
        }
        const double gbs = measure(*a, *b);
        verify(ctx, *a, *b);
        slowest = std::min(slowest, gbs);
        const std::string pair = fmt::format("{}{}{}", a->device, bidir_ ? "<->" : "->", b->device);
        ctx.record("GB/s " + pair, "GB/s", Better::higher, gbs);
        if (ctx.measuring()) {
          pairs_[pair].push_back(gbs);
        }
      }
    }
    if (slowest != std::numeric_limits<double>::infinity()) {
      ctx.record("GB/s min", "GB/s", Better::higher, slowest);
    }
    record_refused(ctx);
  }

 private:
  [[nodiscard]] std::uint64_t source_seed(int device) const noexcept {
    return seed_ + static_cast<std::uint64_t>(device);
  }

  // The links ranked: which pair was slowest and which fastest by their medians, as a note that a failed
  // `GB/s min` check quotes ("GB/s min: slowest pair 2->3 ...").
  void finish(CaseContext& ctx) override {
    if (pairs_.size() < 2) {
      return;
    }
    std::vector<std::pair<double, std::string>> ranked;
    for (auto& [pair, samples] : pairs_) {
      std::sort(samples.begin(), samples.end());
      ranked.emplace_back(quantile_sorted(samples, 0.5), pair);
    }
    std::sort(ranked.begin(), ranked.end());
    ctx.note(
        fmt::format("GB/s min: slowest pair {} ({:.1f} GB/s median), fastest {} ({:.1f} GB/s), of {} pairs",
                    ranked.front().second, ranked.front().first, ranked.back().second, ranked.back().first,
                    ranked.size()));
  }

  // Note [Refused peers]: the ordered pairs the driver refused peer access, as a count a profile can bound
  // (a node whose topology has a link between every pair must show none) and named once in a note.
  void record_refused(CaseContext& ctx) const {
    const auto& refused = peers_->refused();
    if (ctx.iteration() == 0 && !refused.empty()) {
      std::string pairs;
      for (const auto& [from, to] : refused) {
        pairs += fmt::format("{}{}->{}", pairs.empty() ? "" : ", ", from, to);
      }
      ctx.note(fmt::format("peer_refused: {} (copies between them go through the host)", pairs));
    }
    ctx.record("peer_refused", "pairs", Better::lower, static_cast<double>(refused.size()));
  }

  [[nodiscard]] Leg leg(Gpu& from, Gpu& to) const noexcept { return {&from, &to, read_ ? &to : &from}; }

  void copy(const Leg& l) const {
    const cuda::ScopedDevice on(l.by->device);
    for (std::uint64_t k = 0; k < inner_; ++k) {
      if (sm_) {
        kernels::sm_copy(l.to->dst, l.from->src, bytes_, l.by->s());
      } else {
        MEMSTRESS_CUDA_TRY(
            cudaMemcpyPeerAsync(l.to->dst, l.to->device, l.from->src, l.from->device, bytes_, l.by->s()));
      }
    }
  }

  // GB/s of the pair a->b (and b->a with bidir), timed on the stream of the first leg's issuing GPU.
  double measure(Gpu& a, Gpu& b) {
    for (Gpu* g : {&a, &b}) {
      const cuda::ScopedDevice on(g->device);
      MEMSTRESS_CUDA_TRY(cudaMemsetAsync(g->dst, 0, bytes_, g->s()));
      g->stream->synchronize();
    }
    const Leg first = leg(a, b);
    Gpu& timer = *first.by;
    {
      const cuda::ScopedDevice on(timer.device);
      kernels::spin(kSpinNs, timer.s());
      timer.start->record(timer.s());
    }
    copy(first);
    if (bidir_) {
      const Leg second = leg(b, a);
      Gpu& other = *second.by;
      {
        const cuda::ScopedDevice on(other.device);
        MEMSTRESS_CUDA_TRY(cudaStreamWaitEvent(other.s(), timer.start->get(), 0));
      }
      copy(second);
      const cuda::ScopedDevice on(other.device);
      other.join->record(other.s());
    }
    const cuda::ScopedDevice on(timer.device);
    if (bidir_) {
      const Gpu& other = *leg(b, a).by;
      MEMSTRESS_CUDA_TRY(cudaStreamWaitEvent(timer.s(), other.join->get(), 0));
    }
    timer.stop->record(timer.s());
    timer.stop->synchronize();
    const double seconds = static_cast<double>(cuda::Event::elapsed_ms(*timer.start, *timer.stop)) / 1e3;
    const double moved = static_cast<double>(bytes_) * static_cast<double>(inner_) * (bidir_ ? 2.0 : 1.0);
    return gb_per_s(moved, seconds);
  }

  // Note [What is verified]: b's destination holds a's pattern (and a's holds b's, with bidir).
  void verify(CaseContext& ctx, Gpu& a, Gpu& b) {
    std::vector<std::pair<Gpu*, Gpu*>> copies{{&a, &b}};
    if (bidir_) {
      copies.emplace_back(&b, &a);
    }
    for (const auto& [from, to] : copies) {
      const cuda::ScopedDevice on(to->device);
      to->tally->enqueue(to->dst, bytes_, kPattern, source_seed(from->device), to->s());
      to->stream->synchronize();
      const kernels::CheckResult r = to->tally->collect();
      ctx.verified(r.checked_words, r.bad_words);
      if (!r.ok()) {
        ctx.note(fmt::format("repetition {}: {} bad words in {}->{}", ctx.iteration(), r.bad_words,
                             from->device, to->device));
      }
    }
  }

  // Note [Latency]: every GPU reads every GPU's chain (its own too).
  void latencies(CaseContext& ctx) {
    const std::uint64_t slots = kernels::chase_slots(bytes_);
    double worst = 0;
    for (const auto& memory : gpus_) {
      {
        const cuda::ScopedDevice on(memory->device);
        kernels::chase_init(memory->dst, slots, memory->s());
        memory->stream->synchronize();
      }
      for (const auto& reader : gpus_) {
        if (reader != memory && !peers_->can_access(reader->device, memory->device)) {
          continue;
        }
        const double us = chase(ctx, *reader, *memory, slots);
        worst = std::max(worst, us);
        ctx.record(fmt::format("latency_us {}->{}", reader->device, memory->device), "us", Better::lower, us);
      }
    }
    ctx.record("latency_us max", "us", Better::lower, worst);
  }

  // Microseconds per load of `reader` following the chain in `memory`; checks where the chase ended.
  double chase(CaseContext& ctx, Gpu& reader, const Gpu& memory, std::uint64_t slots) {
    const cuda::ScopedDevice on(reader.device);
    kernels::chase(memory.dst, kWarmHops, static_cast<std::uint64_t*>(reader.end.data()), reader.s());
    reader.start->record(reader.s());
    kernels::chase(memory.dst, kHops, static_cast<std::uint64_t*>(reader.end.data()), reader.s());
    reader.stop->record(reader.s());
    std::uint64_t end = 0;
    MEMSTRESS_CUDA_TRY(
        cudaMemcpyAsync(&end, reader.end.data(), sizeof end, cudaMemcpyDeviceToHost, reader.s()));
    reader.stream->synchronize();
    const auto expected = reinterpret_cast<std::uint64_t>(memory.dst) +
                          kernels::chase_slot_after(kHops, slots) * kernels::kChaseStride;
    ctx.verified(1, end == expected ? 0 : 1);
    if (end != expected) {
      ctx.note(fmt::format("repetition {}: the chase {}->{} ended at {:#x}, not {:#x}", ctx.iteration(),
                           reader.device, memory.device, end, expected));
    }
    return static_cast<double>(cuda::Event::elapsed_ms(*reader.start, *reader.stop)) * 1e3 /
           static_cast<double>(kHops);
  }

  bool latency_;
  bool sm_;
  bool read_;
  bool bidir_;
  std::uint64_t bytes_;
  std::uint64_t inner_;
  std::uint64_t seed_;
  cuda::PrimaryContextsAsFound contexts_;  // first: the other GPUs' contexts go after all that used them
  std::map<std::string, std::vector<double>> pairs_;  // each pair's measured samples, GB/s
  std::optional<PeerAccess> peers_;                   // before the buffers: mappings outlive them
  std::vector<std::unique_ptr<Gpu>> gpus_;            // stable addresses for Leg
};

}  // namespace

WorkloadDef workloads::p2p() {
  return {
      .name = "p2p",
      .summary =
          "the host's peer copy matrix, measured by its first rank alone: copy engine "
          "(`cudaMemcpyPeerAsync`) or SM copy through the peer mapping, the source pushing (`access=write`) "
          "or the destination pulling (`read`), one direction or both at once; `GB/s i->j` (`i<->j`) per "
          "pair and `GB/s min` (the slowest and fastest pair named in a note), `peer_refused` (the pairs "
          "refused peer access); every copy checked on its destination GPU; the contexts it made on the "
          "other GPUs are given back after the case",
      .needs = {.real_gpu = true,
                .more = "2 or more visible; skipped otherwise, and on every rank of a host but its first"},
      .axes =
          {
              {.name = "measure",
               .type = ParamType::choice,
               .defaults = {"bandwidth", "latency"},
               .choices = {"bandwidth", "latency"},
               .help = "bandwidth: the copy matrix; latency: a pointer chase through each GPU's memory from "
                       "every GPU"},
              {.name = "engine",
               .type = ParamType::choice,
               .defaults = {"ce", "sm"},
               .choices = {"ce", "sm"},
               .help = "ce: cudaMemcpyPeerAsync; sm: a copy kernel through the peer mapping"},
              {.name = "access",
               .type = ParamType::choice,
               .defaults = {"write", "read"},
               .choices = {"write", "read"},
               .help = "write: the source GPU pushes; read: the destination GPU pulls"},
              {.name = "direction",
               .type = ParamType::choice,
               .defaults = {"uni", "bidir"},
               .choices = {"uni", "bidir"},
               .help = "uni: one direction at a time; bidir: both directions of a pair at once"},
              {.name = "bytes",
               .type = ParamType::bytes,
               .defaults = {"256M"},
               .full_defaults = {"1M", "16M", "256M", "1G"},
               .minimum = static_cast<double>(kernels::kChaseStride),
               .help = "copy size; with measure=latency the size of the chain chased"},
          },
      .headline = {"GB/s min", "latency_us max"},
      .measures_bandwidth = true,
      // Note [Latency]: a chase is SM loads by the reader, one direction.
      .applies = [](const ParamSet& p) -> bool {
        return p.text("measure") == "bandwidth" ||
               (p.text("engine") == "sm" && p.text("access") == "read" && p.text("direction") == "uni");
      },
      // Skips (SkipCase) on other local ranks and with one GPU.
      .prepare = [](CaseContext& ctx) -> std::unique_ptr<CaseRun> { return std::make_unique<P2pRun>(ctx); },
  };
}

}  // namespace memstress::suites
