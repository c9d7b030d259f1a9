#pragma once

// Memory that grows step after step.
//
// Note [Floors and growth]. A training or serving loop's live bytes rise and fall once a step: they
// peak inside a step (activations, the backward pass) and fall back to a floor between steps (weights,
// optimizer state, whatever the program keeps). A leak shows in the floors, not the peaks: each step
// leaves a little more behind. The floors are fitted against the step number with the Theil-Sen estimator
// (the median of the slopes between every pair of floors), which one-time jumps do not move, unlike least
// squares: the optimizer's state appears after the first step and stays, which is not a leak. Growth is
// declared only when the floors rise from step to step in at least 80% of the steps (a deterministic loop's
// floors are equal step after step, so a leak of even one 512-byte block per step rises in every step) and
// there are at least four floors. The same test, on each site's live bytes at the floors, names the sites
// that grow.
//
// Note [Steps are what repeats]. Which dips are the floors between steps is the hard part. Live bytes dip
// inside a step too, and there the dips rise: a forward pass keeps each layer's activations and frees its
// temporaries, so the dips between layers climb until the backward pass frees them. Taken for steps, they
// read as a leak of a layer's activations a "step": on the real PyTorch snapshots of results/, a dip-finding
// filter (a zigzag whose swing is a share of the range) called 30 of 222 recordings growing, every one a step
// or two of a program that does not leak (an OOM snapshot dies inside its last forward pass). What tells a
// step from a layer is that a step repeats: a loop makes the same requests, in the same order and of the same
// sizes, every step (a leak changes what is freed, not what is asked), while a layer's pattern gives way to
// the next layer's, the backward pass and the optimizer. So the step is the smallest period P at which the
// device's events (action and bytes) repeat, event i as event i + P, on at least 90% of the walk from the
// second step on (the first makes the optimizer's state), at least four steps were recorded, and the steps
// give back most of what they take (the median step keeps at most half its median rise: a layer keeps its
// activations). The candidates for P are the distances between the dips the zigzag filter finds at a quarter,
// a tenth, a twenty-fifth and a hundredth of the range (so a leak that widens the range is still seen); each
// is checked on a sample of the walk first, then on all of it. The loop runs from the first step whose events
// the next step repeats to the last (building the model before it and what follows it are no steps), and each
// step's floor is its lowest point: the least live bytes within half a period of the same phase in every
// step, that of the loop's first lowest point. A loop whose steps differ (batches of varying length, a
// serving loop whose requests differ) has no period and its growth is not judged; the doctor says so and what
// to record. On the 222 snapshots, one recording has a period and grows: the loop that keeps each step's loss
// tensor (results/h100/doctor-580.159.04/snapshots/leak_train); its fix has a period and does not grow; no
// other recording has four repeating steps.

#include <cstdint>
#include <optional>
#include <vector>

#include "harness/doctor/live_walk.hpp"

namespace memstress::doctor {

struct Floor {
  std::size_t position = 0;  // into the walk
  std::int64_t bytes = 0;
};

// The dips between successive peaks of the walk's live bytes whose swing is `swing_fraction` of the range
// (a zigzag filter): the candidates for the steps' length (Note [Steps are what repeats]).
[[nodiscard]] std::vector<Floor> find_floors(const std::vector<std::int64_t>& live,
                                             double swing_fraction = 0.25);

// What one event of the walk is to the step detector: its action and its bytes.
struct StepToken {
  replay::Action action = replay::Action::alloc;
  std::uint64_t bytes = 0;
  friend bool operator==(const StepToken&, const StepToken&) = default;
};

// The number of events a step takes, where the walk's events repeat step after step for at least four
// steps; empty where they do not (Note [Steps are what repeats]). `tokens` has one entry per position.
[[nodiscard]] std::optional<std::size_t> step_period(const std::vector<std::int64_t>& live,
                                                     const std::vector<StepToken>& tokens);

// One floor a step of the loop (where each step's events the next repeats): the lowest live bytes within half
// a period of the same phase of every step.
[[nodiscard]] std::vector<Floor> step_floors(const std::vector<std::int64_t>& live,
                                             const std::vector<StepToken>& tokens, std::size_t period);

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
