#pragma once

// The burn's loop on each rank (`memstress burn`): the engine's steps until each interval's wall clock runs
// out, the sampler alongside, and at each interval's end a row per GPU through the run's results, judged on
// rank 0 as it arrives.
//
// Note [A row a minute]. An interval is at most 60 s, and its row is appended to the results stream (the
// .jsonl beside --out, flushed) as soon as every rank has sent it, so a burn stopped by a signal, a dead rank
// or a lost GPU keeps every interval but the one in flight. The intervals are of one length (the duration
// divided into whole intervals), and every rank runs the same number of them, so the gather at each
// interval's end is where a rank that died is found (DistError names it, and the burn FAILs).

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/burn/engine.hpp"
#include "harness/burn/judge.hpp"
#include "harness/burn/profile.hpp"
#include "harness/core/planted_faults.hpp"
#include "harness/env/telemetry.hpp"
#include "harness/run/session.hpp"

namespace memstress {

struct BurnSetup {
  BurnProfile profile;  // duration_s and interval_s as the burn runs them
  double sample_s = 1;  // the sampler's period
  std::vector<TimedFault> faults;
  // Made on each rank once the session is up (the device's memory is the allocator's).
  std::function<std::unique_ptr<BurnEngine>(SessionParts&)> make_engine;
  std::function<std::unique_ptr<Telemetry>(SessionParts&)> make_telemetry;  // null result: none
  // Rank 0: each interval's findings as they are made, and the engine's description once.
  std::function<void(const std::string&)> on_start;
  std::function<void(int interval, int intervals, const std::vector<BurnFinding>&)> on_interval;
};

// How many intervals, and how long each: the duration in whole intervals of at most interval_s.
struct IntervalPlan {
  int count = 1;
  double seconds = 1;
};
[[nodiscard]] IntervalPlan plan_intervals(double duration_s, double interval_s);

// Runs the burn in `parts` (every rank) and judges it on rank 0 into `judge`.
void run_burn(const BurnSetup& setup, SessionParts& parts, BurnJudge& judge);

}  // namespace memstress
