// dataloader: the input pipeline of a training loop, stage by stage.
//
// Note [The pipeline]. Producers (threads, or forked worker processes writing into shared memory as
// PyTorch's DataLoader workers do) fill batches of pageable source data into a ring
// (suites/support/batch_ring.hpp). `pin_threads` pinning threads take the batches in order of arrival: with
// pin=true each copies its batch into a block from the shared pinned host cache and frees the ring slot at
// once, then enqueues the H2D copy from the pinned block on the copy stream and frees the block behind it
// (record_stream: the cache reuses it once the copy is done); with pin=false it enqueues the H2D copy
// straight from the pageable slot (the driver stages it) and frees the slot when cudaMemcpyAsync returns,
// which for pageable memory is once the data has left the slot. Device blocks come from the shared allocator
// on the copy stream. The main thread consumes: the compute stream waits for the batch's copy, checks every
// word of it on the device, runs `compute_us` of compute, and frees the block behind it (record_stream). At
// most the ring's depth (prefetch x producers, as in PyTorch) batches are on the device at once, so device
// memory stays bounded as in a real loader.
//
// Note [What is measured]. Wall time runs from the start of the producers to the last kernel. samples/s
// and H2D GB/s are end to end (the batches delivered and checked over wall time); `vs_pinned` divides the
// latter by a plain pinned cudaMemcpyAsync loop of the same batch size timed in the same case (the
// `transfers` figure), which is the target's yardstick. The shares say where time went: `producer_wait`
// is the share of the pinning threads' time spent waiting for a producer, `copy_busy` and `compute_busy`
// the share of wall time the copy and compute streams were busy (CUDA events around each copy and each
// compute step). Device memory: the peak reserved and allocated bytes over the pass.
//
// On the simulated device there is no copy: the pinning threads check each batch on the host after
// staging it, so the producers, processes, ring and pinned cache logic all run in CI.

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "harness/alloc/allocator.hpp"
#include "harness/alloc/pinned_host_allocator.hpp"
#include "harness/core/cuda_check.hpp"
#include "harness/core/error.hpp"
#include "harness/core/units.hpp"
#include "harness/memory/backend.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "harness/memory/host_buffers.hpp"
#include "harness/run/context.hpp"
#include "harness/run/timing.hpp"
#include "harness/run/workload.hpp"
#include "kernels/pattern.hpp"
#include "suites/registry.hpp"
#include "suites/support/batch_ring.hpp"
#include "suites/support/blocks.hpp"

namespace memstress::suites {
namespace {

constexpr auto kDeadline = std::chrono::milliseconds(60'000);
constexpr std::uint64_t kSampleElements = 3ULL * 224 * 224;  // one image, as a vision loader's sample
constexpr std::int64_t kMaxWorkers = 64;
constexpr std::int64_t kMaxPrefetch = 64;

std::int64_t stat(const MemoryStats& stats, std::string_view key) {
  const auto it = stats.find(key);
  return it == stats.end() ? 0 : it->second;
}

std::uint64_t dtype_bytes(const std::string& dtype) {
  if (dtype == "uint8") {
    return 1;
  }
  return dtype == "fp16" || dtype == "bf16" ? 2 : 4;
}

// A batch on its way from the copy stream to the compute stream.
struct InFlight {
  std::uint64_t batch = 0;
  DeviceBlock block;
  cuda::Event copy_start;
  cuda::Event copy_stop;
};

struct Settings {
  ProducerGroup::Kind workers = ProducerGroup::Kind::thread;
  std::size_t producers = 1;
  std::size_t pin_threads = 1;
  bool pin = true;
  std::uint64_t batches = 0;
  std::uint64_t compute_ns = 0;
};

class DataloaderRun final : public CaseRun {
 public:
  explicit DataloaderRun(CaseContext& ctx)
      : real_(ctx.device().has_memory()),
        ring_(static_cast<std::size_t>(ctx.params().integer("prefetch") * ctx.params().integer("producers")),
              ctx.params().bytes("bytes"), kDeadline),
        samples_per_batch_(static_cast<double>(ring_.batch_bytes()) /
                           static_cast<double>(kSampleElements * dtype_bytes(ctx.params().text("dtype")))) {
    settings_.workers = ctx.params().text("workers") == "process" ? ProducerGroup::Kind::process
                                                                  : ProducerGroup::Kind::thread;
    const std::int64_t producers = ctx.params().integer("producers");
    const std::int64_t pinners = ctx.params().integer("pin_threads");
    if (producers > kMaxWorkers || pinners > kMaxWorkers) {
      throw InputError(fmt::format("producers and pin_threads: at most {} each", kMaxWorkers));
    }
    settings_.producers = static_cast<std::size_t>(producers);
    settings_.pin_threads = static_cast<std::size_t>(pinners);
    settings_.pin = ctx.params().boolean("pin");
    settings_.batches = static_cast<std::uint64_t>(ctx.params().integer("batches"));
    settings_.compute_ns = static_cast<std::uint64_t>(ctx.params().real("compute_us") * 1e3);
    if (real_) {
      copy_stream_.emplace();
      compute_stream_.emplace();
      tally_.emplace();
      reference_gbs_ = pinned_reference();
    }
    host_copy_gbs_ = host_copy_reference();
  }

  void iteration(CaseContext& ctx) override {
    const std::uint64_t seed = ctx.seed() + (static_cast<std::uint64_t>(ctx.iteration()) << 40U);
    ring_.reset();
    queue_.clear();
    next_batch_.store(0);
    producer_wait_ns_.store(0);
    host_checked_.store(0);
    host_bad_.store(0);
    std::vector<cuda::Event> compute_events;
    Allocator& allocator = ctx.allocator();
    allocator.reset_peak_stats();

    const HostTimer wall;
    ProducerGroup producers(settings_.workers, settings_.producers, ring_, seed, settings_.batches);
    std::vector<std::exception_ptr> errors(settings_.pin_threads);
    {
      std::vector<std::jthread> pinners;
      for (std::size_t t = 0; t < settings_.pin_threads; ++t) {
        pinners.emplace_back([&, t] {
          try {
            pin_loop(ctx, seed);
          } catch (...) {
            errors[t] = std::current_exception();
            ring_.abort();
            abort_queue();
          }
        });
      }
      if (real_) {
        try {
          consume(ctx, seed, compute_events);
        } catch (...) {
          ring_.abort();
          abort_queue();
          throw;
        }
      }
    }
    producers.join();
    for (const std::exception_ptr& e : errors) {
      if (e) {
        std::rethrow_exception(e);
      }
    }
    std::uint64_t checked = host_checked_.load();
    std::uint64_t bad = host_bad_.load();
    if (real_) {
      compute_stream_->synchronize();
      const kernels::CheckResult c = tally_->collect();
      checked += c.checked_words;
      bad += c.bad_words;
    }
    const double seconds = wall.seconds();
    ctx.verified(checked, bad);
    if (bad != 0) {
      ctx.note(fmt::format("repetition {}: {} bad words in delivered batches", ctx.iteration(), bad));
    }
    report(ctx, seconds, compute_events);
  }

 private:
  void pin_loop(CaseContext& ctx, std::uint64_t seed) {
    std::optional<cuda::ScopedDevice> on;  // a new thread starts on device 0; the case's may be another
    if (real_) {
      on.emplace(ctx.device().info().ordinal);
    }
    for (;;) {
      const std::uint64_t b = next_batch_.fetch_add(1);
      if (b >= settings_.batches) {
        return;
      }
      const HostTimer waited;
      ring_.wait_ready(b);
      producer_wait_ns_.fetch_add(static_cast<std::uint64_t>(waited.seconds() * 1e9));
      const void* source = ring_.slot(b);
      HostBlock staged;
      if (settings_.pin) {
        staged = HostBlock(ctx.host_allocator(), ring_.batch_bytes());
        std::memcpy(staged.get(), source, ring_.batch_bytes());
        ring_.release(b);
        source = staged.get();
      }
      if (!real_) {
        host_bad_.fetch_add(ring_.count_bad(source, seed, b));
        host_checked_.fetch_add(ring_.batch_bytes() / 8);
        if (!settings_.pin) {
          ring_.release(b);
        }
        continue;
      }
      wait_for_room();
      auto flight = std::make_unique<InFlight>();
      flight->batch = b;
      {
        const std::scoped_lock lock(copy_mutex_);  // keeps each copy's events around that copy alone
        const cudaStream_t copy = copy_stream_->get();
        flight->block = DeviceBlock(ctx.allocator(), ring_.batch_bytes(), StreamRef::from(copy));
        flight->copy_start.record(copy);
        MEMSTRESS_CUDA_TRY(
            cudaMemcpyAsync(flight->block.get(), source, ring_.batch_bytes(), cudaMemcpyHostToDevice, copy));
        flight->copy_stop.record(copy);
        if (settings_.pin) {
          staged.record_stream(StreamRef::from(copy));
        }
      }
      staged.reset();
      if (!settings_.pin) {
        ring_.release(b);  // a pageable cudaMemcpyAsync returns once the data has left the slot
      }
      push(std::move(flight));
    }
  }

  void consume(CaseContext& ctx, std::uint64_t seed, std::vector<cuda::Event>& compute_events) {
    const cudaStream_t compute = compute_stream_->get();
    for (std::uint64_t n = 0; n < settings_.batches; ++n) {
      std::unique_ptr<InFlight> flight = pop();
      if (!flight) {
        return;  // aborted: a pinning thread failed and says why
      }
      MEMSTRESS_CUDA_TRY(cudaStreamWaitEvent(compute, flight->copy_stop.get(), 0));
      compute_events.emplace_back();
      compute_events.back().record(compute);
      tally_->enqueue(flight->block.get(), ring_.batch_bytes(), kernels::Pattern::address,
                      BatchRing::batch_seed(seed, flight->batch), compute);
      if (settings_.compute_ns != 0) {
        kernels::spin(settings_.compute_ns, compute);
      }
      compute_events.emplace_back();
      compute_events.back().record(compute);
      flight->block.record_stream(StreamRef::from(compute));
      flight->block.reset();
      copy_times_.push_back(std::move(flight));
      const MemoryStats stats = ctx.allocator().memory_stats();
      reserved_peak_ = std::max(reserved_peak_, stat(stats, "reserved_bytes.all.current"));
    }
  }

  void report(CaseContext& ctx, double seconds, const std::vector<cuda::Event>& compute_events) {
    const double batches = static_cast<double>(settings_.batches);
    ctx.record("samples/s", "samples/s", Better::higher, batches * samples_per_batch_ / seconds);
    const double bytes = batches * static_cast<double>(ring_.batch_bytes());
    ctx.record("host_memcpy_GB/s", "GB/s", Better::higher, host_copy_gbs_);
    ctx.record("producer_wait", "share", Better::none,
               static_cast<double>(producer_wait_ns_.load()) * 1e-9 /
                   (seconds * static_cast<double>(settings_.pin_threads)));
    if (!real_) {
      ctx.record("staged_GB/s", "GB/s", Better::higher, gb_per_s(bytes, seconds));
      return;
    }
    const double gbs = gb_per_s(bytes, seconds);
    ctx.record("h2d_GB/s", "GB/s", Better::higher, gbs);
    ctx.record("vs_pinned", "ratio", Better::higher, gbs / reference_gbs_);
    ctx.record("pinned_ref_GB/s", "GB/s", Better::higher, reference_gbs_);
    double copy_s = 0;
    for (const auto& f : copy_times_) {
      copy_s += static_cast<double>(cuda::Event::elapsed_ms(f->copy_start, f->copy_stop)) / 1e3;
    }
    double compute_s = 0;
    for (std::size_t i = 0; i + 1 < compute_events.size(); i += 2) {
      compute_s +=
          static_cast<double>(cuda::Event::elapsed_ms(compute_events[i], compute_events[i + 1])) / 1e3;
    }
    copy_times_.clear();
    ctx.record("copy_busy", "share", Better::none, copy_s / seconds);
    ctx.record("compute_busy", "share", Better::none, compute_s / seconds);
    const MemoryStats stats = ctx.allocator().memory_stats();
    ctx.record(
        "peak_reserved", "MiB", Better::lower,
        static_cast<double>(std::max(reserved_peak_, stat(stats, "reserved_bytes.all.peak"))) / 1048576.0);
    ctx.record("peak_allocated", "MiB", Better::lower,
               static_cast<double>(stat(stats, "allocated_bytes.all.peak")) / 1048576.0);
  }

  // The host's own copy bandwidth with as many threads as the pinning stage: each thread copies a batch
  // from the ring into a pageable buffer of its own, four times. The pinning stage cannot beat it, and the
  // producers share the same memory bus.
  double host_copy_reference() const {
    constexpr int kRounds = 4;
    const std::size_t bytes = ring_.batch_bytes();
    std::vector<PageableBuffer> targets;
    for (std::size_t t = 0; t < settings_.pin_threads; ++t) {
      targets.emplace_back(bytes);
    }
    const HostTimer timer;
    {
      std::vector<std::jthread> threads;
      for (std::size_t t = 0; t < settings_.pin_threads; ++t) {
        threads.emplace_back([&, t] {
          for (int r = 0; r < kRounds; ++r) {
            std::memcpy(targets[t].data(), ring_.slot(t + static_cast<std::size_t>(r)), bytes);
          }
        });
      }
    }
    return gb_per_s(static_cast<double>(bytes) * kRounds * static_cast<double>(settings_.pin_threads),
                    timer.seconds());
  }

  // A plain pinned cudaMemcpyAsync loop of the batch size: the `transfers` pinned H2D figure.
  double pinned_reference() const {
    const std::size_t bytes = ring_.batch_bytes();
    const cuda::PinnedBuffer host(bytes);
    const cuda::DeviceBuffer device(bytes);
    const cudaStream_t s = copy_stream_->get();
    const DeviceTimer timer;
    const int copies = static_cast<int>(std::clamp<std::uint64_t>((1ULL << 30U) / bytes, 4, 256));
    MEMSTRESS_CUDA_TRY(
        cudaMemcpyAsync(device.data(), host.data(), bytes, cudaMemcpyHostToDevice, s));  // warm
    kernels::spin(50'000, s);
    timer.start(s);
    for (int i = 0; i < copies; ++i) {
      MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(device.data(), host.data(), bytes, cudaMemcpyHostToDevice, s));
    }
    timer.stop(s);
    return gb_per_s(static_cast<double>(bytes) * copies, timer.seconds());
  }

  void wait_for_room() {
    std::unique_lock lock(queue_mutex_);
    room_.wait(lock, [&] { return aborted_ || in_flight_ < ring_.depth(); });
    ++in_flight_;
  }
  void push(std::unique_ptr<InFlight> flight) {
    {
      const std::scoped_lock lock(queue_mutex_);
      queue_.push_back(std::move(flight));
    }
    ready_.notify_one();
  }
  std::unique_ptr<InFlight> pop() {
    std::unique_lock lock(queue_mutex_);
    ready_.wait(lock, [&] { return aborted_ || !queue_.empty(); });
    if (queue_.empty()) {
      return nullptr;
    }
    std::unique_ptr<InFlight> f = std::move(queue_.front());
    queue_.pop_front();
    --in_flight_;
    room_.notify_one();
    return f;
  }
  void abort_queue() {
    {
      const std::scoped_lock lock(queue_mutex_);
      aborted_ = true;
    }
    ready_.notify_all();
    room_.notify_all();
  }

  bool real_;
  Settings settings_;
  BatchRing ring_;
  double samples_per_batch_;
  double reference_gbs_ = 0;
  double host_copy_gbs_ = 0;
  std::optional<cuda::Stream> copy_stream_;
  std::optional<cuda::Stream> compute_stream_;
  std::optional<kernels::CheckTally> tally_;  // on a real GPU

  std::atomic<std::uint64_t> next_batch_{0};
  std::atomic<std::uint64_t> producer_wait_ns_{0};
  std::atomic<std::uint64_t> host_checked_{0};
  std::atomic<std::uint64_t> host_bad_{0};
  std::mutex copy_mutex_;
  std::mutex queue_mutex_;
  std::condition_variable ready_;
  std::condition_variable room_;
  std::deque<std::unique_ptr<InFlight>> queue_;
  std::size_t in_flight_ = 0;
  bool aborted_ = false;
  std::vector<std::unique_ptr<InFlight>> copy_times_;
  std::int64_t reserved_peak_ = 0;
};

}  // namespace

WorkloadDef workloads::dataloader() {
  return {
      .name = "dataloader",
      .summary =
          "producer threads or forked worker processes fill a shared-memory ring (`prefetch` x `producers` "
          "slots, as PyTorch's DataLoader), pinning threads stage batches in the pinned cache (or not: "
          "`pin=false`), a copy stream and a compute stream that checks every batch: samples/s, H2D GB/s "
          "against pinned transfers, where time goes, device memory",
      .needs = {.more = "the copies need a GPU"},
      .axes =
          {
              {.name = "workers",
               .type = ParamType::choice,
               .defaults = {"thread", "process"},
               .full_defaults = {"thread", "process"},
               .choices = {"thread", "process"},
               .help = "producers are threads, or forked processes writing into shared memory"},
              {.name = "producers",
               .type = ParamType::integer,
               .defaults = {"4"},
               .full_defaults = {"1", "4", "8"},
               .minimum = 1,
               .maximum = kMaxWorkers,
               .help = "producer workers"},
              {.name = "pin_threads",
               .type = ParamType::integer,
               .defaults = {"4"},
               .full_defaults = {"1", "4"},
               .minimum = 1,
               .maximum = kMaxWorkers,
               .help = "pinning threads"},
              {.name = "prefetch",
               .type = ParamType::integer,
               .defaults = {"2"},
               .full_defaults = {"2", "4"},
               .minimum = 1,
               .maximum = kMaxPrefetch,
               .help = "batches in flight per producer (PyTorch's prefetch_factor): ring slots = prefetch x "
                       "producers"},
              {.name = "bytes",
               .type = ParamType::bytes,
               .defaults = {"32M"},
               .full_defaults = {"8M", "32M", "128M"},
               .minimum = 4096,
               .help = "batch size in bytes"},
              {.name = "pin",
               .type = ParamType::boolean,
               .defaults = {"true", "false"},
               .full_defaults = {"true", "false"},
               .help =
                   "stage batches in pinned memory from the pinned cache (false: copy from pageable memory)"},
              {.name = "dtype",
               .type = ParamType::choice,
               .defaults = {"uint8"},
               .full_defaults = {"uint8", "fp32"},
               .choices = {"uint8", "fp16", "bf16", "fp32"},
               .help = "sample element type (a sample is 3x224x224 elements): sets samples per batch"},
              // Costs time, not memory: up to 10^9 (the signal tests run a case of 10^8 until they stop it).
              {.name = "batches",
               .type = ParamType::integer,
               .defaults = {"64"},
               .full_defaults = {"256"},
               .minimum = 1,
               .maximum = 1'000'000'000,
               .help = "batches per repetition"},
              {.name = "compute_us",
               .type = ParamType::real,
               .defaults = {"0"},
               .full_defaults = {"0", "500"},
               .minimum = 0,
               .maximum = 1e6,
               .help = "compute per batch, microseconds"},
          },
      .headline = {"samples/s"},
      .measures_bandwidth = true,
      .prepare = [](CaseContext& ctx) -> std::unique_ptr<CaseRun> {
        return std::make_unique<DataloaderRun>(ctx);
      },
  };
}

}  // namespace memstress::suites
