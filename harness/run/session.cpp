#include "harness/run/session.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "harness/alloc/allocator.hpp"
#include "harness/alloc/pinned_host_allocator.hpp"
#include "harness/core/error.hpp"
#include "harness/core/log.hpp"
#include "harness/core/planted_faults.hpp"
#include "harness/core/version.hpp"
#include "harness/dist/nccl_comm.hpp"
#include "harness/dist/rank_setup.hpp"
#include "harness/dist/world.hpp"
#include "harness/env/environment.hpp"
#include "harness/env/health.hpp"
#include "harness/memory/backend.hpp"
#include "harness/memory/numa.hpp"
#include "harness/results/sink.hpp"
#include "harness/run/fault.hpp"
#include "harness/run/progress.hpp"

namespace memstress {

std::unique_ptr<DeviceBackend> open_rank_device(std::string_view device, std::string_view what,
                                                std::string_view required_by, World& world) {
  std::unique_ptr<DeviceBackend> backend;
  try {
    backend = make_backend(rank_device(device, what, world));
  } catch (const EnvironmentError& e) {
    if (!required_by.empty()) {
      throw EnvironmentError(fmt::format("{}: {}", required_by, e.what()));
    }
    throw;
  }
  check_one_rank_per_gpu(world, device, what, backend->info());
  return backend;
}

int note_skipped_cases(const RunRecord& run, std::string_view flag) {
  constexpr int kNamed = 5;
  int skipped = 0;
  for (const Row& row : run.rows) {
    if (row.verdict != Verdict::skip) {
      continue;
    }
    if (++skipped <= kNamed) {
      note("{}: skipped: {} {} [{}]: {}", flag, row.workload, row.case_label(), row.allocator, row.reason);
    }
  }
  if (skipped > 0) {
    note("{}: {} case(s) skipped: the run fails", flag, skipped);
  }
  return skipped;
}

Session::Session(SessionOptions options, std::unique_ptr<DeviceBackend> backend, World& world,
                 InterruptWatch& interrupts)
    : world_(world), options_(std::move(options)), backend_(std::move(backend)) {
  if (const std::string faults = fault_hooks_note(backend_->info().kind == BackendKind::sim);
      !faults.empty() && world_.rank() == 0) {
    note("{}", faults);
  }
  const DeviceInfo& device = backend_->info();
  RunRecord header;
  const VersionInfo version = version_info();
  header.tool_version = version.version;
  header.git_sha = version.git_sha;
  header.argv = options_.argv;
  header.started_at = utc_now_iso8601();
  header.config = options_.config;
  header.config["device_label"] = device.label();
  header.config["ranks"] = world_.size();
  header.ranks = world_.size();
  header.straggler_threshold = options_.straggler_threshold;
  nlohmann::json local = to_json(collect_environment());
  if (device.kind == BackendKind::cuda) {
    // Before the health watch and NCCL start their threads, which inherit the policy.
    NearGpu near = place_near_gpu(device.ordinal, options_.numa);
    local["numa"] = to_json(near.placement);
    numa_policy_ = std::move(near.restore);
  }
  header.environment = gather_environment(world_, std::move(local), *backend_);
  health_ = run_health_watch(device.kind == BackendKind::cuda, device.uuid);
  nccl_ = make_nccl(world_, *backend_);
  sink_ = std::make_unique<ResultSink>(std::move(header), writer() ? options_.out : std::nullopt,
                                       options_.out_what, options_.row_digests);

  RunOptions& run = options_.run;
  // A planted hang (Note [Planted faults]): the first case that runs never returns, on every rank.
  if (!run.fault && (device.kind == BackendKind::sim ? simulated_device_faults() : planted_faults()).hang) {
    run.fault = FaultInjection{world_.rank(), 0, FaultInjection::Kind::hang, "MEMSTRESS_PLANT_FAULT=hang"};
  }
  run.quiet = run.quiet || !writer();
  run.world = &world_;
  run.nccl = nccl_.get();
  run.health = health_.get();
  ProgressOptions shown;
  shown.total = options_.cases.size() * options_.allocators.size();
  shown.quiet = run.quiet;
  shown.live = options_.progress == "always" || (options_.progress == "auto" && isatty(fileno(stderr)) != 0);
  shown.name_allocator = options_.allocators.size() > 1;
  shown.columns = terminal_columns();
  progress_ = std::make_unique<Progress>(std::move(shown));
  run.progress = progress_.get();
  // One pinned host cache for the whole run, as a process has one: page-locked memory on a GPU.
  host_ = std::make_unique<PinnedHostAllocator>(make_host_memory_source(
      device.kind == BackendKind::cuda && !options_.pageable_host && !planted_faults().pageable_host
          ? "cuda"
          : "plain"));
  // SIGINT/SIGTERM/SIGHUP: the finished rows become an aborted document before the process ends (Note
  // [Interrupted runs]). A Handler can be neither copied nor moved: `new` takes on_interrupt's result as
  // it is made.
  on_signal_.reset(new InterruptWatch::Handler(  // NOLINT(modernize-make-unique): neither copied nor moved
      interrupts.on_interrupt([this](int signal) {
        const std::string why =
            fmt::format("interrupted by {} after {} finished row(s)", signal_name(signal), sink_->rows());
        if (sink_->finish(RunStatus::aborted, why) && writer() && options_.interrupted) {
          options_.interrupted(sink_->record(), signal, why);
        }
      })));
}

Session::~Session() = default;

bool Session::writer() const noexcept {
  return world_.rank() == 0;
}

int Session::run(const std::function<void(const Allocator&)>& after_each) {
  int failures = 0;
  try {
    for (AllocatorSpec a : options_.allocators) {
      if (a.trace) {
        a.trace = rank_path(*a.trace, world_);
      }
      const std::unique_ptr<Allocator> allocator = make_allocator(a, *backend_);
      failures += Runner(*allocator, options_.run, host_.get()).run(options_.cases, *sink_);
      if (after_each) {
        after_each(*allocator);
      }
    }
  } catch (const std::exception& e) {
    // Keep what finished: the final document says the run was aborted and why.
    sink_->finish(RunStatus::aborted, e.what());
    throw;
  }
  sink_->finish(RunStatus::complete);
  return failures;
}

void Session::run_loop(const std::function<void(SessionParts&)>& loop) {
  try {
    const AllocatorSpec spec = options_.allocators.empty() ? AllocatorSpec{} : options_.allocators.front();
    const std::unique_ptr<Allocator> allocator = make_allocator(spec, *backend_);
    SessionParts parts{*backend_, world_, health_.get(), host_.get(), *sink_, *allocator};
    loop(parts);
  } catch (const std::exception& e) {
    sink_->finish(RunStatus::aborted, e.what());
    throw;
  }
  sink_->finish(RunStatus::complete);
}

}  // namespace memstress
