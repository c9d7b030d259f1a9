#include "harness/burn/loop.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cmath>

#include "harness/burn/interval_row.hpp"
#include "harness/burn/sampler.hpp"
#include "harness/dist/world.hpp"
#include "harness/env/health.hpp"
#include "harness/memory/backend.hpp"
#include "harness/results/sink.hpp"
#include "harness/run/case_sync.hpp"
#include "harness/run/runner.hpp"

namespace memstress {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double fault_time(const std::vector<TimedFault>& faults, TimedFault::Kind kind) {
  for (const TimedFault& f : faults) {
    if (f.kind == kind) {
      return f.after_s;
    }
  }
  return -1;
}

unsigned long long fault_xid(const std::vector<TimedFault>& faults) {
  for (const TimedFault& f : faults) {
    if (f.kind == TimedFault::Kind::xid) {
      return f.xid;
    }
  }
  return 0;
}

}  // namespace

namespace {

// Every rank meets here, each saying whether it can go on: a GPU that errored (a sticky CUDA error) cannot,
// and then every rank stops together, the error judged (a rank left waiting for the others would only time
// out). Throws on every rank, naming each rank that failed and why (rank 0 learns the others' reasons).
void stop_together(World& world, const std::string& error, const std::string& when) {
  const std::vector<double> failed = world.all_gather(error.empty() ? 0.0 : 1.0);
  const std::vector<std::string> why = world.gather(error);
  std::vector<std::string> named;
  for (std::size_t r = 0; r < failed.size(); ++r) {
    if (failed[r] > 0) {
      named.push_back(
          fmt::format("rank {}: {}", r, r < why.size() ? why[r] : std::string("could not go on")));
    }
  }
  if (!named.empty()) {
    throw std::runtime_error(fmt::format("the burn stopped {}: {}", when, fmt::join(named, "; ")));
  }
}

}  // namespace

IntervalPlan plan_intervals(double duration_s, double interval_s) {
  IntervalPlan p;
  p.count = std::max(1, static_cast<int>(std::ceil(duration_s / interval_s - 1e-9)));
  p.seconds = duration_s / p.count;
  return p;
}

void run_burn(const BurnSetup& setup, SessionParts& parts, BurnJudge& judge) {
  World& world = parts.world;
  const IntervalPlan plan = plan_intervals(setup.profile.duration_s, setup.profile.interval_s);
  std::unique_ptr<BurnEngine> engine;
  std::string failed;
  try {
    engine = setup.make_engine(parts);
  } catch (const std::exception& e) {  // its memory taken by another process, say: every rank stops
    failed = e.what();
  }
  stop_together(world, failed, "before its first interval");
  if (world.rank() == 0 && setup.on_start) {
    setup.on_start(engine->describe());
  }
  const GpuHealth health_start = parts.health != nullptr ? parts.health->read() : GpuHealth{};
  align_ranks(world, "burn");
  const Clock::time_point began = Clock::now();
  const auto period = std::chrono::milliseconds(std::max<long long>(1, std::llround(setup.sample_s * 1000)));
  Sampler sampler(setup.make_telemetry ? setup.make_telemetry(parts) : nullptr, period, began,
                  fault_time(setup.faults, TimedFault::Kind::throttle));

  const double xid_at = fault_time(setup.faults, TimedFault::Kind::xid);
  bool xid_planted = false;
  for (int k = 0; k < plan.count; ++k) {
    const Clock::time_point end = began + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(plan.seconds * (k + 1)));
    IntervalInputs in;
    in.index = k;
    in.began_s = seconds_since(began);
    const Clock::time_point start = Clock::now();
    std::string error;
    try {
      do {
        engine->step(in.work, seconds_since(began));
      } while (Clock::now() < end);
    } catch (const std::exception& e) {
      error = e.what();
    }
    in.seconds = seconds_since(start);
    in.samples = sampler.take(plan.seconds * (k + 1));
    in.telemetry_unavailable = sampler.unavailable();
    in.allowed_clock_reasons = setup.profile.allowed_clock_reasons;
    in.health_start = health_start;
    in.health_read = parts.health != nullptr;
    in.health_now = parts.health != nullptr ? parts.health->read() : GpuHealth{};
    in.gemm_library = engine->gemm_library();
    if (xid_at >= 0 && xid_at < plan.seconds * (k + 1)) {  // the planned interval its time falls in, or later
      in.planted_xids = 1;  // counted from its interval on, as NVML's count since the watch began
      if (!xid_planted) {
        in.planted_notes.push_back(xid_note(fault_xid(setup.faults)));
        xid_planted = true;
      }
    }
    Row row = interval_row(in);
    row.rank = world.rank();
    row.device = device_ref(parts.backend);
    row.device.node = world.node();
    if (!error.empty()) {
      row.verdict = Verdict::error;
      row.reason = error;
    }
    std::vector<Row> rows = gather_rows(world, std::move(row), fmt::format("burn interval {}", k));
    if (world.rank() == 0) {
      try {  // whatever fails here (the results' disk full), the ranks still meet below
        std::vector<BurnFinding> found = judge.judge_interval(rows);
        for (Row& r : rows) {
          parts.sink.append(std::move(r));
        }
        if (setup.on_interval) {
          setup.on_interval(k, plan.count, found);
        }
      } catch (const std::exception& e) {
        error = error.empty() ? fmt::format("judging and writing the interval: {}", e.what()) : error;
      }
    }
    stop_together(world, error, fmt::format("in interval {}", k));
  }
  if (world.rank() == 0) {
    const std::vector<BurnFinding> missing = judge.finish();
    if (setup.on_interval && !missing.empty()) {
      setup.on_interval(plan.count, plan.count, missing);
    }
  }
}

}  // namespace memstress
