#pragma once

// Memory that grows step after step.
//
// Note [Floors and growth]. A training or serving loop's live bytes rise and fall once a step: they
// peak inside a step (activations, the backward pass) and fall back to a floor between steps (weights,
// optimizer state, whatever the program keeps). A leak shows in the floors, not the peaks: each step
// leaves a little more behind. The floors are found with a zigzag filter: a peak counts once the live
// bytes have fallen from it by `swing` (a quarter of the walk's whole range), a floor once they have
// risen from it by as much; so each floor is the lowest point between two real peaks, and the small
// ups and downs inside a step are not steps. A leak that is large beside one step's swing widens the range
// (100 MiB of activations a step, 10 MiB kept each time, 40 steps: the range is five swings), so where a
// quarter finds fewer than four floors, a tenth and then a twenty-fifth of the range are tried. The floors
// are then fitted against the step number with the Theil-Sen estimator (the median of the slopes between
// every pair of floors), which one-time jumps do not move, unlike least squares: the optimizer's state
// appears after the first step and stays, which is not a leak. Growth is declared only when the floors rise
// from step to step in at least 80% of the steps (a deterministic loop's floors are equal step after step, so
// a leak of even one 512-byte block per step rises in every step) and there are at least four floors. The
// same test, on each site's live bytes at the floors, names the sites that grow.

#include <cstdint>
#include <vector>

#include "harness/doctor/live_walk.hpp"

namespace memstress::doctor {

struct Floor {
  std::size_t position = 0;  // into the walk
  std::int64_t bytes = 0;
};

// The floors between successive peaks of the walk's live bytes.
[[nodiscard]] std::vector<Floor> find_floors(const std::vector<std::int64_t>& live,
                                             double swing_fraction = 0.25);

struct LineFit {
  double slope = 0;  // per step
  double intercept = 0;
  double r2 = 0;  // of the Theil-Sen line
  std::size_t points = 0;
  std::size_t rises = 0;  // steps whose value is above the step before
  [[nodiscard]] bool growing() const noexcept;
};

// The Theil-Sen line through (k, values[k]).
[[nodiscard]] LineFit fit_steps(const std::vector<std::int64_t>& values);

struct SiteGrowth {
  std::int32_t site = -1;
  LineFit fit;
  std::int64_t first = 0;  // live bytes at the first floor
  std::int64_t last = 0;   // and at the last
};

// The sites whose live bytes at the floors grow (LineFit::growing), the fastest first.
[[nodiscard]] std::vector<SiteGrowth> growing_sites(const LiveWalk& walk, const std::vector<Floor>& floors);

}  // namespace memstress::doctor
