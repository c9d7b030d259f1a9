// transfers: host<->device and device<->device copy bandwidth.
//
// Note [What is measured]. A case copies `bytes` in one direction (or two at once: `bidir`), split into
// `streams` equal chunks on as many streams, `inner` times back to back between two CUDA events, behind a
// spin kernel so that the host's launch overhead stays out; `inner` is chosen so one sample moves at least
// 256 MiB. GB/s is bytes moved / seconds (1e9 bytes/s); `bidir` counts both directions, and `d2d` counts
// reads and writes (2 x bytes per copy, as the usual "4 TB/s" device-to-device figure does). The harness
// turns the repetitions into median, p10/p90 and the coefficient of variation.
//
// Host memory comes from where real programs get it: `pinned` blocks from the shared pinned host cache
// (PinnedHostAllocator, what a DataLoader's pin_memory uses), `pageable` ordinary memory (the driver
// stages it through its own pinned buffers), `registered` ordinary memory locked with cudaHostRegister.
// Device buffers come from the shared device allocator. `engine=ce` copies with cudaMemcpyAsync (the copy
// engines); `engine=sm` with a kernel of 16-byte loads and stores over mapped host memory or device
// memory (pageable memory cannot be mapped, so that combination is not a case).
//
// Note [Both ways at once]. `bidir`'s GB/s is both directions' bytes over one window, from the common start
// to the last copy of either. It also records each direction under the other's load (`h2d_GB/s`,
// `d2h_GB/s`): with copy engines and page-locked host memory, each in a window of its own in which the other
// direction moves twice its bytes, its bytes over the time from the common start to its own last copy, so
// that the other runs beside it to its end. That is how nvbandwidth's host bidirectional copy-engine
// testcases time the direction they are named after. Timed in the one window, where both move the same
// bytes, the direction that ends last runs its tail alone and reads higher (on 4 H200s, H2D while D2H ran,
// every GPU at once: 31 % above nvbandwidth's); pageable copies, which take turns, keep that. With engine=sm
// both directions are one kernel, even warps copying one way and odd warps the other, as nvbandwidth's SM
// bidirectional testcases do (its split-warp kernel); each direction's figure is then its bytes over the
// whole window, half the GB/s of both, as nvbandwidth reports them (its kernel copies each 16 bytes
// `loopCount` times in a row, memstress's each once a pass: where the host side is the bottleneck, every GPU
// at once, its default counts the repeats: 34.0 GB/s a direction on 4 H200s, 20.1 with one copy,
// memstress 19.0). Two kernels side by side, as before, left the SMs to whichever direction's blocks were
// scheduled first. What still differs from nvbandwidth: every GPU at once, it times one GPU at a time while
// every other loads both directions with twice the bytes, where memstress times every GPU's same direction
// together; its load is one buffer of twice the size, memstress's twice the rounds of the same; it holds
// every copy behind a blocking kernel until all are enqueued, memstress behind a 50 us spin.
//
// Note [The reference]. Where a target is stated against "a plain cudaMemcpyAsync loop", the same case also
// times that loop side by side: for host=pinned, the same copies between a cudaHostAlloc buffer and a
// cudaMalloc buffer; for d2d, cudaMemcpyAsync between two cudaMalloc buffers. `ref_GB/s` is that loop and
// `vs_ref` the ratio of the two, sample by sample, so the ratio is not disturbed by drift between cases.
//
// Where the host buffers' pages lie is read back once they are filled: `numa_local` is 1 when every one
// is on a NUMA node the GPU is attached to (Note [Host memory near the GPU], harness/memory/numa.hpp).
//
// Note [What is verified]. Sources hold the random pattern from the case seed; each repetition clears the
// destinations first, and after the timed copies checks every destination word on the device (a pinned or
// registered destination is read through its mapping; a pageable one is first copied to a device block).
// For bidir by copy engine the windows that time each direction under the other's load run before the
// clearing, and are not checked: the window of both, whose figure is GB/s, is.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "harness/alloc/allocator.hpp"
#include "harness/alloc/pinned_host_allocator.hpp"
#include "harness/core/cuda_check.hpp"
#include "harness/core/error.hpp"
#include "harness/core/units.hpp"
#include "harness/dist/world.hpp"
#include "harness/memory/backend.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "harness/memory/host_buffers.hpp"
#include "harness/memory/numa.hpp"
#include "harness/results/row.hpp"
#include "harness/run/context.hpp"
#include "harness/run/timing.hpp"
#include "harness/run/workload.hpp"
#include "kernels/copy.hpp"
#include "kernels/pattern.hpp"
#include "suites/axes.hpp"
#include "suites/registry.hpp"
#include "suites/support/blocks.hpp"

namespace memstress::suites {
namespace {

constexpr std::uint64_t kSpinNs = 50'000;
constexpr std::uint64_t kSampleBytes = 256ULL << 20U;  // each sample moves at least this much
constexpr std::uint64_t kMaxInner = 256;
constexpr std::int64_t kMaxStreams = axes::kMaxTransferStreams;
constexpr std::size_t kChunkAlign = 4096;
constexpr kernels::Pattern kPattern = kernels::Pattern::random;

enum class Direction { h2d, d2h, bidir, d2d };
enum class HostKind { pinned, pageable, registered };
enum class Engine { ce, sm };

Direction parse_direction(const std::string& s) {
  if (s == "h2d") {
    return Direction::h2d;
  }
  if (s == "d2h") {
    return Direction::d2h;
  }
  return s == "bidir" ? Direction::bidir : Direction::d2d;
}

HostKind parse_host(const std::string& s) {
  if (s == "pinned") {
    return HostKind::pinned;
  }
  return s == "pageable" ? HostKind::pageable : HostKind::registered;
}

// Host memory of one of the three kinds; data() is usable by the device when mapped() is true.
class HostMemory {
 public:
  HostMemory(HostKind kind, PinnedHostAllocator& pinned, std::size_t bytes) {
    switch (kind) {
      case HostKind::pinned:
        memory_.emplace<HostBlock>(pinned, bytes);
        mapped_ = pinned.pinned();  // not under `run --host-memory pageable`
        break;
      case HostKind::pageable:
        memory_.emplace<PageableBuffer>(bytes);
        mapped_ = false;
        break;
      case HostKind::registered:
        memory_.emplace<RegisteredBuffer>(bytes);
        break;
    }
  }
  [[nodiscard]] void* data() const {
    return std::visit(
        [](const auto& m) -> void* {
          if constexpr (std::is_same_v<std::decay_t<decltype(m)>, HostBlock>) {
            return m.get();
          } else if constexpr (std::is_same_v<std::decay_t<decltype(m)>, std::monostate>) {
            return nullptr;
          } else {
            return m.data();
          }
        },
        memory_);
  }
  [[nodiscard]] bool mapped() const noexcept { return mapped_; }

 private:
  std::variant<std::monostate, HostBlock, PageableBuffer, RegisteredBuffer> memory_;
  bool mapped_ = true;
};

// One direction's copy: `src` to `dst`, split over the leg's streams.
struct Leg {
  void* dst = nullptr;
  const void* src = nullptr;
  std::vector<cudaStream_t> streams;
  bool to_device = true;  // h2d or d2d; false for d2h
};

// Stream i's chunk of a leg's copy of `bytes` (empty where the chunks run out first).
struct Piece {
  unsigned char* dst = nullptr;
  const unsigned char* src = nullptr;
  std::size_t length = 0;
};

Piece piece(const Leg& leg, std::size_t i, std::size_t bytes) {
  const std::size_t n = leg.streams.size();
  const std::size_t chunk = (bytes / n + kChunkAlign - 1) / kChunkAlign * kChunkAlign;
  const std::size_t offset = std::min(bytes, i * chunk);
  return {static_cast<unsigned char*>(leg.dst) + offset, static_cast<const unsigned char*>(leg.src) + offset,
          std::min(chunk, bytes - offset)};
}

// One timed window's seconds: every leg's copies together, and each leg's from the common start to its own
// last copy (Note [Both ways at once]).
struct Window {
  double seconds = 0;
  std::vector<double> legs;
};

// How many rounds each leg copies in a window: `inner`, and `load` times as many for every leg but `timed`.
struct Rounds {
  std::uint64_t inner = 1;
  std::uint64_t load = 1;
  std::size_t timed = 0;
  [[nodiscard]] std::uint64_t of(std::size_t leg) const { return leg == timed ? inner : inner * load; }
};

// Enqueues the rounds of every leg's chunked copies between the timer's events (Note [Both ways at once]).
// `joins` has an event for each stream of a leg but its first, `ends` one for each leg.
Window timed_copies(const std::vector<Leg>& legs, std::size_t bytes, Rounds rounds, Engine engine,
                    cudaStream_t main, const DeviceTimer& timer, const std::vector<cuda::Event>& joins,
                    const std::vector<cuda::Event>& ends) {
  unsigned sharing = 0;  // copies at once: every stream of every leg (kernels::sm_copy)
  for (const Leg& leg : legs) {
    sharing += static_cast<unsigned>(leg.streams.size());
  }
  kernels::spin(kSpinNs, main);
  timer.start(main);
  for (const Leg& leg : legs) {
    for (cudaStream_t s : leg.streams) {
      if (s != main) {
        MEMSTRESS_CUDA_TRY(cudaStreamWaitEvent(s, timer.start_event(), 0));
      }
    }
  }
  // Note [Both ways at once]: SM copies both ways are one kernel a stream, half its warps on each leg.
  const bool split = engine == Engine::sm && legs.size() == 2;
  const std::uint64_t most = split ? rounds.inner : rounds.inner * rounds.load;  // one kernel: no leg to load
  for (std::uint64_t k = 0; k < most; ++k) {
    if (split) {
      const std::size_t n = legs[0].streams.size();
      for (std::size_t i = 0; i < n; ++i) {
        const Piece a = piece(legs[0], i, bytes);
        const Piece b = piece(legs[1], i, bytes);
        if (a.length != 0) {
          kernels::sm_copy_both(a.dst, a.src, b.dst, b.src, a.length, legs[0].streams[i],
                                static_cast<unsigned>(n));
        }
      }
      continue;
    }
    for (std::size_t l = 0; l < legs.size(); ++l) {
      const Leg& leg = legs[l];
      if (k >= rounds.of(l)) {
        continue;
      }
      for (std::size_t i = 0; i < leg.streams.size(); ++i) {
        const Piece c = piece(leg, i, bytes);
        if (c.length == 0) {
          continue;
        }
        if (engine == Engine::ce) {
          MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(c.dst, c.src, c.length, cudaMemcpyDefault, leg.streams[i]));
        } else {
          kernels::sm_copy(c.dst, c.src, c.length, leg.streams[i], sharing);
        }
      }
    }
  }
  std::size_t j = 0;
  for (std::size_t l = 0; l < legs.size(); ++l) {
    const std::vector<cudaStream_t>& streams = legs[l].streams;
    for (std::size_t i = 1; i < streams.size(); ++i) {
      joins.at(j).record(streams[i]);
      MEMSTRESS_CUDA_TRY(cudaStreamWaitEvent(streams.front(), joins.at(j).get(), 0));
      ++j;
    }
    ends.at(l).record(streams.front());
    if (streams.front() != main) {
      MEMSTRESS_CUDA_TRY(cudaStreamWaitEvent(main, ends.at(l).get(), 0));
    }
  }
  timer.stop(main);
  Window window{timer.seconds(), {}};
  for (std::size_t l = 0; l < legs.size(); ++l) {
    window.legs.push_back(split ? window.seconds : timer.seconds_until(ends.at(l)));
  }
  return window;
}

class TransfersRun final : public CaseRun {
 public:
  explicit TransfersRun(CaseContext& ctx)
      : direction_(parse_direction(ctx.params().text("direction"))),
        host_kind_(parse_host(ctx.params().text("host"))),
        engine_(ctx.params().text("engine") == "sm" ? Engine::sm : Engine::ce),
        bytes_(ctx.params().bytes("bytes")),
        inner_(std::clamp<std::uint64_t>((kSampleBytes + bytes_ - 1) / bytes_, 1, kMaxInner)) {
    const std::int64_t n = ctx.params().integer("streams");
    if (n > kMaxStreams) {
      throw InputError(fmt::format("streams={}: at most {} streams", n, kMaxStreams));
    }
    const std::int64_t legs = direction_ == Direction::bidir ? 2 : 1;
    for (std::int64_t i = 0; i < n * legs; ++i) {
      streams_.emplace_back();
    }
    for (std::int64_t i = 0; i < (n - 1) * legs; ++i) {  // every stream of a leg but its first (timed_copies)
      joins_.emplace_back(cuda::Event::Timing::disabled);
      ref_joins_.emplace_back(cuda::Event::Timing::disabled);
    }
    for (std::int64_t i = 0; i < legs; ++i) {
      ends_.emplace_back();
      ref_ends_.emplace_back();
    }
    make_buffers(ctx, static_cast<std::size_t>(n));
    if (engine_ == Engine::sm &&
        !std::all_of(host_.begin(), host_.end(), [](const HostMemory& h) { return h.mapped(); })) {
      throw Error(
          ExitCode::check_failed,
          "engine=sm reads and writes host memory from a kernel, which needs page-locked memory; this "
          "run's pinned host cache is pageable (run --host-memory pageable)");
    }
  }

  void iteration(CaseContext& ctx) override {
    // Note [Both ways at once]: by copy engine to and from page-locked memory, each direction is timed in a
    // window of its own under the other's load; these run before the destinations are cleared (Note [What is
    // verified]). Pageable copies to the host hold the host until they end, so the two directions take turns
    // rather than load each other: there, as by SM, each direction's figure comes from the one window.
    const bool under_load =
        direction_ == Direction::bidir && engine_ == Engine::ce && host_kind_ != HostKind::pageable;
    std::vector<double> loaded;
    for (std::size_t l = 0; under_load && l < legs_.size(); ++l) {
      loaded.push_back(timed(ctx, legs_, engine_, joins_, ends_, Rounds{inner_, 2, l}).legs.at(l));
    }
    clear_destinations();
    const Window window = timed(ctx, legs_, engine_, joins_, ends_, Rounds{inner_});
    verify(ctx);
    const double one_way = static_cast<double>(bytes_) * static_cast<double>(inner_);
    if (direction_ == Direction::bidir) {
      for (std::size_t l = 0; l < legs_.size(); ++l) {
        ctx.record(legs_[l].to_device ? "h2d_GB/s" : "d2h_GB/s", "GB/s", Better::higher,
                   gb_per_s(one_way, under_load ? loaded.at(l) : window.legs.at(l)));
      }
    }
    const double moved =
        one_way * (direction_ == Direction::bidir || direction_ == Direction::d2d ? 2.0 : 1.0);
    const double gbs = gb_per_s(moved, window.seconds);
    ctx.record("GB/s", "GB/s", Better::higher, gbs);
    if (host_kind_ == HostKind::pinned && !host_.empty()) {
      ctx.record("page_locked", "flag", Better::higher, page_locked() ? 1.0 : 0.0);
    }
    if (numa_local_) {
      ctx.record("numa_local", "flag", Better::higher, *numa_local_ ? 1.0 : 0.0);
    }
    if (!ref_legs_.empty()) {
      const double ref =
          gb_per_s(moved, timed(ctx, ref_legs_, Engine::ce, ref_joins_, ref_ends_, Rounds{inner_}).seconds);
      ctx.record("ref_GB/s", "GB/s", Better::higher, ref);
      ctx.record("vs_ref", "ratio", Better::higher, gbs / ref);
    }
  }

 private:
  [[nodiscard]] cudaStream_t main() const noexcept { return streams_.front().get(); }

  // Note [Every GPU at once]: where every rank runs the case at the same moment (not --in-turn), each
  // timed window starts on every GPU together, behind a spinning barrier, as nvbandwidth's host_to_all
  // and all_to_host start every GPU's copies at once. Without it the ranks drift apart within a few
  // repetitions (each verifies 512 MiB and times its reference loop at its own pace), one rank's timed
  // copies meet another's verification or nothing at all, and "all at once" measured each GPU nearly
  // alone (all_to_host 52.5 GB/s a GPU on 4 H200s, against nvbandwidth's 33.6).
  Window timed(CaseContext& ctx, const std::vector<Leg>& legs, Engine engine,
               const std::vector<cuda::Event>& joins, const std::vector<cuda::Event>& ends, Rounds rounds) {
    if (ctx.together()) {
      streams_.front().synchronize();  // the destinations cleared, or the last window's copies done
      ctx.world().spin_barrier();
    }
    return timed_copies(legs, bytes_, rounds, engine, main(), timer_, joins, ends);
  }

  // Whether the driver itself knows every host buffer as page-locked (what host=pinned asks for), not
  // what the host cache claims: memory that ended up pageable (a memlock limit, a fallback, a planted
  // fault) is slower and stages through the driver's own buffers.
  [[nodiscard]] bool page_locked() const {
    return std::all_of(host_.begin(), host_.end(), [](const HostMemory& h) {
      cudaPointerAttributes attributes{};
      MEMSTRESS_CUDA_TRY(cudaPointerGetAttributes(&attributes, h.data()));
      return attributes.type == cudaMemoryTypeHost;
    });
  }

  // Note [Host memory near the GPU]: whether every host buffer's pages lie on a NUMA node the GPU is
  // attached to, read back from the kernel once the buffers are filled; nothing where the GPU's node or
  // a buffer's cannot be read.
  [[nodiscard]] std::optional<bool> numa_local(CaseContext& ctx) const {
    if (host_.empty()) {
      return std::nullopt;  // d2d: no host memory
    }
    const HostTopology host;  // loaded once for the GPU and every buffer
    const std::vector<int> near = host.gpu_nodes(ctx.device().info().ordinal);
    if (near.empty()) {
      ctx.note(fmt::format("{}numa_local (the GPU's NUMA node is not known)", kNotMeasured));
      return std::nullopt;
    }
    bool local = true;
    for (const HostMemory& h : host_) {
      const std::optional<int> node = host.node_of(h.data(), bytes_);
      if (!node) {
        ctx.note(fmt::format("{}numa_local (the kernel did not say where a host buffer's pages lie)",
                             kNotMeasured));
        return std::nullopt;
      }
      local = local && std::find(near.begin(), near.end(), *node) != near.end();
    }
    return local;
  }

  [[nodiscard]] std::vector<cudaStream_t> stream_range(std::size_t first, std::size_t count) const {
    std::vector<cudaStream_t> out;
    for (std::size_t i = first; i < first + count; ++i) {
      out.push_back(streams_.at(i).get());
    }
    return out;
  }

  DeviceBlock& device_block() {
    device_.emplace_back(allocator_ref(), bytes_, StreamRef::from(main()));
    for (const cuda::Stream& s : streams_) {
      device_.back().record_stream(StreamRef::from(s.get()));
    }
    return device_.back();
  }
  [[nodiscard]] Allocator& allocator_ref() const { return *allocator_; }

  void fill_host(void* dst) {
    const DeviceBlock scratch(*allocator_, bytes_, StreamRef::from(main()));
    kernels::fill(scratch.get(), bytes_, kPattern, seed_, main());
    MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(dst, scratch.get(), bytes_, cudaMemcpyDefault, main()));
    streams_.front().synchronize();
  }

  void make_buffers(CaseContext& ctx, std::size_t n) {
    allocator_ = &ctx.allocator();
    seed_ = ctx.seed();
    device_.reserve(4);
    host_.reserve(2);
    const auto add_h2d = [&](std::size_t first) {
      host_.emplace_back(host_kind_, ctx.host_allocator(), bytes_);
      fill_host(host_.back().data());
      DeviceBlock& dst = device_block();
      legs_.push_back(Leg{dst.get(), host_.back().data(), stream_range(first, n), true});
      checks_.push_back(Check{dst.get(), false, false});
    };
    const auto add_d2h = [&](std::size_t first) {
      DeviceBlock& src = device_block();
      kernels::fill(src.get(), bytes_, kPattern, seed_, main());
      host_.emplace_back(host_kind_, ctx.host_allocator(), bytes_);
      legs_.push_back(Leg{host_.back().data(), src.get(), stream_range(first, n), false});
      checks_.push_back(Check{host_.back().data(), true, !host_.back().mapped()});
    };
    switch (direction_) {
      case Direction::h2d:
        add_h2d(0);
        break;
      case Direction::d2h:
        add_d2h(0);
        break;
      case Direction::bidir:
        add_h2d(0);
        add_d2h(n);
        break;
      case Direction::d2d: {
        DeviceBlock& src = device_block();
        kernels::fill(src.get(), bytes_, kPattern, seed_, main());
        DeviceBlock& dst = device_block();
        legs_.push_back(Leg{dst.get(), src.get(), stream_range(0, n), true});
        checks_.push_back(Check{dst.get(), false, false});
        break;
      }
    }
    if (std::any_of(checks_.begin(), checks_.end(), [](const Check& c) { return c.via_device_copy; })) {
      bounce_ = DeviceBlock(*allocator_, bytes_, StreamRef::from(main()));
    }
    make_reference(n);
    streams_.front().synchronize();
    numa_local_ = numa_local(ctx);
  }

  // Note [The reference]: the same legs between cudaHostAlloc/cudaMalloc buffers. Their sources hold the
  // case's pattern too: the reference copies what the measured copies copy, and never reads memory nothing
  // wrote (compute-sanitizer's initcheck reports a copy from uninitialized device memory).
  void make_reference(std::size_t n) {
    if (direction_ == Direction::d2d) {
      ref_device_.emplace_back(bytes_);
      kernels::fill(ref_device_.back().data(), bytes_, kPattern, seed_, main());
      ref_device_.emplace_back(bytes_);
      ref_legs_.push_back(Leg{ref_device_[1].data(), ref_device_[0].data(), stream_range(0, n), true});
      return;
    }
    if (host_kind_ != HostKind::pinned || engine_ != Engine::ce) {
      return;
    }
    std::size_t first = 0;
    for (const Leg& leg : legs_) {
      ref_host_.emplace_back(bytes_);
      ref_device_.emplace_back(bytes_);
      if (leg.to_device) {
        fill_host(ref_host_.back().data());
        ref_legs_.push_back(
            Leg{ref_device_.back().data(), ref_host_.back().data(), stream_range(first, n), true});
      } else {
        kernels::fill(ref_device_.back().data(), bytes_, kPattern, seed_, main());
        ref_legs_.push_back(
            Leg{ref_host_.back().data(), ref_device_.back().data(), stream_range(first, n), false});
      }
      first += n;
    }
  }

  void clear_destinations() {
    // Everything before has been synchronized (verify): host destinations are cleared by the host.
    for (const Check& c : checks_) {
      if (c.host) {
        std::memset(c.buffer, 0, bytes_);
      } else {
        MEMSTRESS_CUDA_TRY(cudaMemsetAsync(c.buffer, 0, bytes_, main()));
      }
    }
  }

  void verify(CaseContext& ctx) {
    for (const Check& c : checks_) {
      if (c.via_device_copy) {
        MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(bounce_.get(), c.buffer, bytes_, cudaMemcpyDefault, main()));
        tally_.enqueue(bounce_.get(), bytes_, kPattern, seed_, main());
      } else {
        tally_.enqueue(c.buffer, bytes_, kPattern, seed_, main());
      }
    }
    streams_.front().synchronize();
    const kernels::CheckResult result = tally_.collect();
    ctx.verified(result.checked_words, result.bad_words);
    if (!result.ok()) {
      ctx.note(fmt::format("repetition {}: {} bad words after the copy", ctx.iteration(), result.bad_words));
    }
  }

  struct Check {
    void* buffer = nullptr;        // a destination
    bool host = false;             // in host memory
    bool via_device_copy = false;  // pageable: copied to the bounce block to be checked
  };

  Direction direction_;
  HostKind host_kind_;
  Engine engine_;
  std::uint64_t bytes_;
  std::uint64_t inner_;
  Allocator* allocator_ = nullptr;
  std::uint64_t seed_ = 0;
  std::vector<cuda::Stream> streams_;
  std::vector<cuda::Event> joins_;
  std::vector<cuda::Event> ref_joins_;
  std::vector<cuda::Event> ends_;
  std::vector<cuda::Event> ref_ends_;
  std::vector<HostMemory> host_;
  std::optional<bool> numa_local_;
  std::vector<DeviceBlock> device_;
  DeviceBlock bounce_;
  std::vector<cuda::PinnedBuffer> ref_host_;
  std::vector<cuda::DeviceBuffer> ref_device_;
  std::vector<Leg> legs_;
  std::vector<Leg> ref_legs_;
  std::vector<Check> checks_;
  DeviceTimer timer_;
  kernels::CheckTally tally_;
};

}  // namespace

WorkloadDef workloads::transfers() {
  return {
      .name = "transfers",
      .summary =
          "H2D, D2H, both at once and D2D; pinned (the shared pinned cache), pageable and "
          "`cudaHostRegister`ed host memory; copy engine (`cudaMemcpyAsync`) or SM copy kernel; 1-32 "
          "streams; sizes by `-b/-e/-f`; GB/s with p10/p90/CV (both at once also each direction under the "
          "other's load, `h2d_GB/s` and `d2h_GB/s`: by copy engine from page-locked memory each timed in a "
          "window of its own while the other moves twice its bytes, as nvbandwidth times them (pageable: in "
          "the one window of both); by SM both ways are one split-warp kernel and each is half of both), "
          "`vs_ref` against a plain `cudaMemcpyAsync` loop timed side by side, for pinned host memory "
          "`page_locked` (1 when the driver knows every host buffer as page-locked), and `numa_local` (1 "
          "when every host buffer's pages lie on the GPU's NUMA node); under `mpirun` without `--in-turn`, "
          "every rank's timed copies start together (every GPU at once)",
      .needs = {.real_gpu = true},
      .axes = axes::transfers(),  // Note [The axes in one place], suites/axes.hpp
      .headline = {"GB/s"},
      .measures_bandwidth = true,
      .applies = axes::transfers_applies,
      .prepare = [](CaseContext& ctx) -> std::unique_ptr<CaseRun> {
        return std::make_unique<TransfersRun>(ctx);
      },
  };
}

}  // namespace memstress::suites
