#include "harness/run/runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "harness/alloc/allocator.hpp"
#include "harness/core/error.hpp"
#include "harness/core/log.hpp"
#include "harness/dist/dist_error.hpp"
#include "harness/dist/world.hpp"
#include "harness/memory/backend.hpp"
#include "harness/results/sink.hpp"
#include "harness/run/case_clocks.hpp"
#include "harness/run/case_sync.hpp"
#include "harness/run/context.hpp"
#include "harness/run/nvtx.hpp"
#include "harness/run/progress.hpp"
#include "harness/run/workload.hpp"

namespace memstress {
namespace {

std::uint64_t fnv1a(std::string_view text, std::uint64_t hash) noexcept {
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::optional<std::string> skip_reason(const Workload& w, const DeviceBackend& backend, int world_size) {
  const Requirements& req = w.requirements();
  if (req.real_gpu && !backend.has_memory()) {
    return fmt::format("needs a real GPU (running on the simulated device {})", backend.info().label());
  }
  if (req.min_ranks > world_size) {
    return fmt::format("needs {} ranks (running with {})", req.min_ranks, world_size);
  }
  return std::nullopt;
}

// The first of the workload's headline metrics the case recorded, else the first it recorded ("" for none).
std::string headline_of(const Workload& w, const std::vector<MetricResult>& metrics) {
  for (const std::string& name : w.headline()) {
    if (find_metric(metrics, name) != nullptr) {
      return name;
    }
  }
  return metrics.empty() ? std::string() : metrics.front().name;
}

// Is the device still usable after an error? A sticky error (illegal address, launch failure) makes
// every later call fail; cases after it cannot run.
bool device_still_usable(DeviceBackend& backend) noexcept {
  try {
    backend.synchronize();
    return true;
  } catch (...) {
    return false;
  }
}

bool failed(const Row& row) noexcept {
  return row.verdict == Verdict::fail || row.verdict == Verdict::error;
}

// For the progress line: the verdict of the worst row of a case across ranks, and its reason naming the
// rank when there are several.
std::pair<Verdict, std::string> case_outcome(const std::vector<Row>& rows) {
  constexpr auto kSeverity = [](Verdict v) {
    return v == Verdict::error ? 3 : v == Verdict::fail ? 2 : v == Verdict::skip ? 1 : 0;
  };
  const auto worst = std::max_element(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    return kSeverity(a.verdict) < kSeverity(b.verdict);
  });
  if (worst == rows.end()) {
    return {Verdict::pass, {}};
  }
  if (rows.size() == 1 || worst->reason.empty()) {
    return {worst->verdict, worst->reason};
  }
  return {worst->verdict, fmt::format("rank {}: {}", worst->rank, worst->reason)};
}

// A rank is lost during a case: rank 0 keeps its own row of it (often the error that the loss caused, say an
// NCCL wait that timed out), then the run aborts with the reason naming the lost rank. Rank 0 has always run
// its case by then: in turn, its turn comes first.
void keep_own_row(const World& world, const Row& row, ResultSink& sink) {
  if (world.rank() == 0) {
    sink.append(row);
  }
}

// The barrier after one rank's turn at an in-turn case.
void turn_done(World& world, const std::string& what, const Row& row, ResultSink& sink) {
  try {
    world.barrier();
  } catch (const DistError& e) {
    keep_own_row(world, row, sink);
    throw DistError(fmt::format("{}: {}", what, e.what()));
  }
}

// Note [Turns by local rank]. `--in-turn` keeps a workload's ranks off each other's host memory and PCIe,
// which only the ranks of one node share: so the ranks take turns by local rank, and in each turn one rank
// of every node runs (local rank 0 of each node, then local rank 1, ...). On one node that is one rank at a
// time. The number of turns is the largest node's rank count; every rank takes part in every turn's barrier.
int turns_per_node(World& world, const std::vector<PlannedCase>& cases) {
  const bool any = std::any_of(cases.begin(), cases.end(), [](const PlannedCase& c) { return c.in_turn; });
  if (!any || world.size() == 1) {
    return 1;
  }
  try {
    const std::vector<double> sizes = world.all_gather(static_cast<double>(world.local_size()));
    return static_cast<int>(*std::max_element(sizes.begin(), sizes.end()));
  } catch (const DistError& e) {
    throw DistError(fmt::format(
        "before the first case (the ranks' node sizes, for the cases run in turn): {}", e.what()));
  }
}

}  // namespace

DeviceRef device_ref(const DeviceBackend& backend) {
  const DeviceInfo& info = backend.info();
  return DeviceRef{
      info.label(), info.kind == BackendKind::cuda ? "cuda" : "sim", info.ordinal, info.name, info.uuid, {}};
}

std::uint64_t case_seed(std::uint64_t run_seed, const PlannedCase& planned) noexcept {
  std::uint64_t h = fnv1a(planned.workload->name(), 0xcbf29ce484222325ULL ^ run_seed);
  for (const auto& [key, value] : planned.params.values()) {
    h = fnv1a(value, fnv1a(key, h));
  }
  return h;
}

void Runner::run_case(const PlannedCase& planned, std::size_t index, const std::string& title, World& world,
                      Row& row, std::string& lost_after) {
  const NvtxRange range(title);
  CaseContext ctx(planned.params, allocator_, case_seed(options_.seed, planned), host_, &world,
                  options_.nccl);
  ctx.set_health(options_.health);
  ctx.set_together(!planned.in_turn && world.size() > 1);
  // Cases are independent: nothing cached by the one before, peaks from this one alone.
  allocator_.empty_cache();
  allocator_.reset_peak_stats();
  try {
    maybe_inject(options_.fault, world.rank(), index);
    {
      CaseClocks clocks(planned.workload->measures_bandwidth() ? options_.health : nullptr);
      const std::unique_ptr<CaseRun> run = planned.workload->prepare(ctx);
      const int cap = planned.workload->max_repetitions();
      const int warmup = cap > 0 ? 0 : options_.warmup;
      const int total = warmup + (cap > 0 ? std::min(cap, options_.repetitions) : options_.repetitions);
      for (int i = 0; i < total; ++i) {
        ctx.begin_iteration(i, i >= warmup);
        run->iteration(ctx);
      }
      run->finish(ctx);
      clocks.record(ctx);
    }  // the case's buffers are freed here, before the row is closed
    row.verdict = ctx.errors() == 0 ? Verdict::pass : Verdict::fail;
    if (ctx.errors() != 0) {
      row.reason = fmt::format("{} of {} verified items were wrong", ctx.errors(), ctx.checked());
    }
  } catch (const SkipCase& e) {
    row.verdict = Verdict::skip;
    row.reason = e.what();
  } catch (const std::exception& e) {
    row.verdict = Verdict::error;
    row.reason = e.what();
    if (!device_still_usable(allocator_.backend())) {
      lost_after = title;
    }
  }
  row.metrics = ctx.take_metrics();
  row.headline = headline_of(*planned.workload, row.metrics);
  row.checked = ctx.checked();
  row.errors = ctx.errors();
  row.notes = ctx.take_notes();
  try {
    row.allocator_stats = allocator_.memory_stats();
  } catch (const std::exception& e) {
    row.notes.push_back(fmt::format("allocator statistics unavailable: {}", e.what()));
  }
}

int Runner::run(const std::vector<PlannedCase>& cases, ResultSink& sink) {
  int failures = 0;
  std::string lost_after;  // the case after which the device became unusable
  DeviceBackend& backend = allocator_.backend();
  std::optional<Progress> own_progress;
  if (options_.progress == nullptr) {
    own_progress.emplace(cases.size(), options_.quiet);
  }
  Progress& progress = options_.progress != nullptr ? *options_.progress : *own_progress;
  SoloWorld solo;
  World& world = options_.world != nullptr ? *options_.world : solo;
  const int turns = turns_per_node(world, cases);
  for (std::size_t index = 0; index < cases.size(); ++index) {
    const PlannedCase& planned = cases[index];
    Row row;
    row.workload = std::string(planned.workload->name());
    row.params = planned.params.values();
    row.allocator = std::string(allocator_.name());
    row.rank = world.rank();
    row.device = device_ref(backend);
    row.device.node = world.node();
    row.self_test = planned.workload->self_test(planned.params);
    const std::string title = fmt::format("{} {}", row.workload, row.case_label());
    const std::string where = fmt::format("[{}/{}] {}", index + 1, cases.size(), title);
    align_ranks(world, where);  // the case's time starts once every rank is here
    progress.starting(title, row.allocator);
    const auto execute = [&] {
      row.started_at = utc_now_iso8601(/*milliseconds=*/true);  // cases of several ranks are ordered
      const auto start = std::chrono::steady_clock::now();
      if (!lost_after.empty()) {
        row.verdict = Verdict::error;
        row.reason = fmt::format("not run: the device failed fatally during {}", lost_after);
      } else if (const auto reason = skip_reason(*planned.workload, backend, world.size())) {
        row.verdict = Verdict::skip;
        row.reason = *reason;
      } else {
        run_case(planned, index, title, world, row, lost_after);
      }
      row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    if (planned.in_turn && world.size() > 1) {
      // Note [Turns by local rank].
      for (int turn = 0; turn < turns; ++turn) {
        if (turn == world.local_rank()) {
          execute();
        }
        // The next turn starts once this one has finished on every node.
        turn_done(world, fmt::format("case {}, local rank {}'s turn", where, turn), row, sink);
      }
    } else {
      execute();
    }
    const bool mine_failed = failed(row);
    std::vector<Row> rows;
    try {
      rows = gather_rows(world, row, where);
    } catch (const DistError&) {
      keep_own_row(world, row, sink);
      throw;
    }
    if (rows.empty()) {  // not rank 0: rank 0 has the rows
      failures += mine_failed ? 1 : 0;
    }
    const auto [verdict, reason] = case_outcome(rows);
    progress.finished(to_string(verdict), reason);
    for (Row& r : rows) {
      failures += failed(r) ? 1 : 0;
      sink.append(std::move(r));
    }
  }
  return failures;
}

}  // namespace memstress
