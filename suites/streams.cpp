// streams: many streams, each fed by its own host thread, allocating, launching kernels on and freeing
// buffers through the one shared allocator, with buffers used across streams.
//
// Note [One round]. Thread i owns stream i. Each of its `ops` rounds allocates `bytes` on its stream,
// fills the block with the random pattern from a seed of its own, runs a compute kernel of `spin_us`
// microseconds, and then, with `cross=true`, hands the block to the next stream (i + 1 mod n): that stream
// waits for an event of this one, checks the block on the device, and the thread calls record_stream for
// it before it frees the block at once, without waiting. The allocator must not hand the block out again
// before the other stream has checked it; if it does, a later fill overwrites it and the check counts bad
// words. With `cross=false` the check runs on the block's own stream and stream order alone protects it.
//
// Note [What is measured]. `ops/s` is rounds of all threads per second of wall time from the start of the
// repetition until every stream has drained; `GB/s` counts the fill's writes and the check's reads.
// `concurrency` is the compute kernels' total time (n x ops x spin_us) over that wall time: the average
// number of streams whose compute kernel ran at once (n is the ideal; the fills and checks, which each use
// the whole GPU, pull it down as blocks grow). `pending_free_peak` is the most bytes freed by the program
// but still waiting on another stream's event (PyTorch's active minus allocated bytes), sampled by thread 0
// once per round.
//
// On the simulated device there are no kernels: the threads allocate, record_stream and free the same way,
// and every block is checked to be aligned and disjoint from all live blocks of all threads instead.

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "harness/alloc/allocator.hpp"
#include "harness/core/cuda_check.hpp"
#include "harness/core/error.hpp"
#include "harness/core/units.hpp"
#include "harness/memory/backend.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "harness/run/context.hpp"
#include "harness/run/timing.hpp"
#include "harness/run/workload.hpp"
#include "kernels/pattern.hpp"
#include "suites/registry.hpp"
#include "suites/support/live_ranges.hpp"

namespace memstress::suites {
namespace {

constexpr std::int64_t kMaxStreams = 32;
constexpr kernels::Pattern kPattern = kernels::Pattern::random;
constexpr std::uintptr_t kSimStreamBase = 0x1000;  // stream identities on the simulated device

std::int64_t stat(const MemoryStats& stats, std::string_view key) {
  const auto it = stats.find(key);
  return it == stats.end() ? 0 : it->second;
}

struct Settings {
  std::size_t streams = 1;
  std::uint64_t ops = 0;
  std::uint64_t bytes = 0;
  bool cross = true;
  std::uint64_t spin_ns = 0;
};

// What one repetition's threads share: the streams, the allocator, and on the simulated device the live
// ranges of every thread.
struct Shared {
  Shared(Allocator& a, const Settings& s, std::uint64_t repetition_seed)
      : allocator(a), settings(s), seed(repetition_seed) {}
  Allocator& allocator;
  const Settings& settings;
  std::vector<StreamRef> streams;
  std::uint64_t seed = 0;
  std::mutex ranges_mutex;
  LiveRanges ranges;
};

struct ThreadResult {
  std::uint64_t checked = 0;
  std::uint64_t bad = 0;
  std::int64_t pending_peak = 0;
  std::exception_ptr error;
};

class StreamsRun final : public CaseRun {
 public:
  explicit StreamsRun(CaseContext& ctx)
      : real_(ctx.device().has_memory()), device_(ctx.device().info().ordinal) {
    const std::int64_t n = ctx.params().integer("streams");
    if (n > kMaxStreams) {
      throw InputError(fmt::format("streams={}: at most {} streams", n, kMaxStreams));
    }
    settings_.streams = static_cast<std::size_t>(n);
    settings_.ops = static_cast<std::uint64_t>(ctx.params().integer("ops"));
    settings_.bytes = ctx.params().bytes("bytes");
    settings_.cross = ctx.params().boolean("cross");
    settings_.spin_ns = static_cast<std::uint64_t>(ctx.params().real("spin_us") * 1e3);
    if (real_) {
      for (std::size_t i = 0; i < settings_.streams; ++i) {
        streams_.emplace_back();
        events_.emplace_back(cuda::Event::Timing::disabled);
        tallies_.emplace_back();
      }
    }
  }

  void iteration(CaseContext& ctx) override {
    // A seed per repetition, so that a stale block from the repetition before cannot pass a check.
    Shared shared(ctx.allocator(), settings_,
                  ctx.seed() + (static_cast<std::uint64_t>(ctx.iteration()) << 48U));
    for (std::size_t i = 0; i < settings_.streams; ++i) {
      shared.streams.push_back(real_ ? StreamRef::from(streams_[i].get()) : StreamRef{kSimStreamBase + i});
    }
    std::vector<ThreadResult> results(settings_.streams);
    const HostTimer wall;
    {
      std::vector<std::jthread> threads;
      for (std::size_t i = 0; i < settings_.streams; ++i) {
        threads.emplace_back([&, i] {
          try {
            if (real_) {
              run_gpu(shared, i, results[i]);
            } else {
              run_sim(shared, i, results[i]);
            }
          } catch (...) {
            results[i].error = std::current_exception();
          }
        });
      }
    }
    for (const cuda::Stream& s : streams_) {
      s.synchronize();
    }
    const double seconds = wall.seconds();
    for (const ThreadResult& r : results) {
      if (r.error) {
        std::rethrow_exception(r.error);
      }
    }
    std::uint64_t checked = 0;
    std::uint64_t bad = 0;
    if (real_) {
      for (kernels::CheckTally& t : tallies_) {
        const kernels::CheckResult c = t.collect();
        checked += c.checked_words;
        bad += c.bad_words;
      }
    } else {
      for (const ThreadResult& r : results) {
        checked += r.checked;
        bad += r.bad;
      }
    }
    ctx.verified(checked, bad);
    if (bad != 0) {
      ctx.note(fmt::format("repetition {}: {} bad {}", ctx.iteration(), bad,
                           real_ ? "words: a block was reused before another stream had finished with it"
                                 : "blocks: misaligned or overlapping a live block"));
    }
    const double rounds = static_cast<double>(settings_.ops * settings_.streams);
    ctx.record("ops/s", "ops/s", Better::higher, rounds / seconds);
    if (real_) {
      ctx.record("GB/s", "GB/s", Better::higher,
                 gb_per_s(2.0 * rounds * static_cast<double>(settings_.bytes), seconds));
      ctx.record("concurrency", "streams", Better::higher,
                 rounds * static_cast<double>(settings_.spin_ns) * 1e-9 / seconds);
    }
    ctx.record("pending_free_peak", "MiB", Better::none,
               static_cast<double>(results.front().pending_peak) / static_cast<double>(1ULL << 20U));
  }

 private:
  void run_gpu(Shared& shared, std::size_t i, ThreadResult& result) {
    const cuda::ScopedDevice on(device_);  // a new thread starts on device 0; the case's may be another
    const Settings& s = settings_;
    const cudaStream_t mine = streams_[i].get();
    const std::size_t other_index = s.cross ? (i + 1) % s.streams : i;
    const cudaStream_t other = streams_[other_index].get();
    for (std::uint64_t r = 0; r < s.ops; ++r) {
      const std::uint64_t seed = shared.seed + (i << 32U) + r;
      void* p = shared.allocator.allocate(s.bytes, shared.streams[i]);
      try {
        kernels::fill(p, s.bytes, kPattern, seed, mine);
        if (s.spin_ns != 0) {
          kernels::spin(s.spin_ns, mine);
        }
        if (other != mine) {
          events_[i].record(mine);
          MEMSTRESS_CUDA_TRY(cudaStreamWaitEvent(other, events_[i].get(), 0));
          shared.allocator.record_stream(p, shared.streams[other_index]);
        }
        tallies_[i].enqueue(p, s.bytes, kPattern, seed, other);
      } catch (...) {
        shared.allocator.deallocate(p);
        throw;
      }
      shared.allocator.deallocate(p);
      if (i == 0) {
        sample_pending(shared, result);
      }
    }
  }

  static void run_sim(Shared& shared, std::size_t i, ThreadResult& result) {
    const Settings& s = shared.settings;
    const std::size_t other = s.cross ? (i + 1) % s.streams : i;
    for (std::uint64_t r = 0; r < s.ops; ++r) {
      void* p = shared.allocator.allocate(s.bytes, shared.streams[i]);
      bool ok = false;
      {
        const std::scoped_lock lock(shared.ranges_mutex);
        ok = shared.ranges.add(p, s.bytes);
      }
      ++result.checked;
      result.bad += ok ? 0U : 1U;
      if (other != i) {
        shared.allocator.record_stream(p, shared.streams[other]);
      }
      {
        const std::scoped_lock lock(shared.ranges_mutex);
        shared.ranges.remove(p);
      }
      shared.allocator.deallocate(p);
      if (i == 0) {
        sample_pending(shared, result);
      }
    }
  }

  static void sample_pending(const Shared& shared, ThreadResult& result) {
    const MemoryStats stats = shared.allocator.memory_stats();
    const std::int64_t pending =
        stat(stats, "active_bytes.all.current") - stat(stats, "allocated_bytes.all.current");
    result.pending_peak = std::max(result.pending_peak, pending);
  }

  bool real_;
  int device_;  // CUDA ordinal of the case's device (0 on the simulated one)
  Settings settings_;
  std::vector<cuda::Stream> streams_;
  std::vector<cuda::Event> events_;
  std::vector<kernels::CheckTally> tallies_;
};

}  // namespace

WorkloadDef workloads::streams() {
  return {
      .name = "streams",
      .summary =
          "1-32 streams, a host thread each, allocating, filling, computing on and freeing blocks; each "
          "block is checked on the next stream behind `record_stream`: ops/s, GB/s, achieved concurrency, "
          "pending-free bytes; on the simulated device the bookkeeping is checked",
      .axes =
          {
              {.name = "streams",
               .type = ParamType::integer,
               .defaults = {"1", "4", "16"},
               .full_defaults = {"1", "2", "4", "8", "16", "32"},
               .minimum = 1,
               .maximum = kMaxStreams,
               .help = "streams, one host thread each"},
              {.name = "bytes",
               .type = ParamType::bytes,
               .defaults = {"1M"},
               .full_defaults = {"64K", "1M", "16M"},
               .minimum = 256,
               .help = "block size"},
              {.name = "ops",
               .type = ParamType::integer,
               .defaults = {"200"},
               .full_defaults = {"1000"},
               .minimum = 1,
               .maximum = 1'000'000,
               .help = "rounds per thread and repetition"},
              {.name = "cross",
               .type = ParamType::boolean,
               .defaults = {"true"},
               .full_defaults = {"true", "false"},
               .help = "check each block on the next stream (record_stream) rather than its own"},
              {.name = "spin_us",
               .type = ParamType::real,
               .defaults = {"20"},
               .full_defaults = {"20"},
               .minimum = 0,
               .maximum = 1e6,
               .help = "compute kernel per round, microseconds"},
          },
      .headline = {"ops/s"},
      .measures_bandwidth = true,
      .prepare = [](CaseContext& ctx) -> std::unique_ptr<CaseRun> {
        return std::make_unique<StreamsRun>(ctx);
      },
  };
}

}  // namespace memstress::suites
