#include "harness/burn/loop.hpp"

#include <fmt/format.h>

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

IntervalPlan plan_intervals(double duration_s, double interval_s) {
  IntervalPlan p;
  p.count = std::max(1, static_cast<int>(std::ceil(duration_s / interval_s - 1e-9)));
  p.seconds = duration_s / p.count;
  return p;
}

void run_burn(const BurnSetup& setup, SessionParts& parts, BurnJudge& judge) {
  World& world = parts.world;
  const IntervalPlan plan = plan_intervals(setup.profile.duration_s, setup.profile.interval_s);
  const std::unique_ptr<BurnEngine> engine = setup.make_engine(parts);
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
      std::vector<BurnFinding> found = judge.judge_interval(rows);
      for (Row& r : rows) {
        parts.sink.append(std::move(r));
      }
      if (setup.on_interval) {
        setup.on_interval(k, plan.count, found);
      }
    }
    // A GPU that errored (a sticky CUDA error) cannot go on: every rank stops here, the error judged.
    const std::vector<double> errored = world.all_gather(error.empty() ? 0.0 : 1.0);
    for (std::size_t r = 0; r < errored.size(); ++r) {
      if (errored[r] > 0) {
        throw std::runtime_error(fmt::format("the burn stopped in interval {}: rank {} {}", k, r,
                                             error.empty() ? std::string("could not go on") : error));
      }
    }
  }
  if (world.rank() == 0) {
    const std::vector<BurnFinding> missing = judge.finish();
    if (setup.on_interval && !missing.empty()) {
      setup.on_interval(plan.count, plan.count, missing);
    }
  }
}

}  // namespace memstress
