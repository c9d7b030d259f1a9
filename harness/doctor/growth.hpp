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
// read as a leak of a layer's activations a "step": on the 222 real PyTorch snapshots of results/, a
// dip-finding filter (a zigzag whose swing is a share of the range) called 30 growing, every one a step or
// two of a program that does not leak (an OOM snapshot dies inside its last forward pass). What tells a step
// is that it repeats: a loop makes the same requests, in the same order and of the same sizes, every step (a
// leak changes what is freed, not what is asked). So the program's requests (its allocs and frees; the
// allocator's segments and completions, whose timing varies, are left out) are searched for a period P among
// candidates: the distances between the dips the zigzag finds at a quarter, a tenth, a twenty-fifth and a
// hundredth of the range, and between the next few times each of the walk's eight rarest requests (asked five
// times at least) is asked, which gives P where a loop asks one of them once a step (its loss, the
// optimizer's step), even where a model's weights make a step's swing a hair of the range. A candidate is
// kept where a loop of requests repeats, request i as request i + P, on 90% of the loop: from the first
// request whose next P requests the P after repeat (90% of them) to the last such and the P after it, so
// building the model before it and what follows it do not count. The loop must span five steps and half the
// requests at least, so one of the two middle quarters of the walk lies in it; a sample of each (512
// requests, 80% repeated in one of them) rules most candidates out before the loop is sought, at the cost of
// missing some loops of five or six steps that repeat barely 90%. Each step's floor is its lowest point: the
// least live bytes within half a period of the same phase in every step of the loop. The smallest P whose
// steps give back all but a little of what they take (the median step keeps, or frees, at most 5% of its
// median rise above the floor it began on) is the step. Requests that repeat but keep more are either the
// layers of one pass or a leak of that much a step (outputs kept with their graph). A layer of a training
// pass keeps most of what it takes (its activations, for the backward; 93% for the encoder's OOM snapshot
// below), a step gives most of it back (its backward and optimizer), and a recording that ends in an OOM the
// program died of (replay::fatal_oom, on any device) can end inside the pass that ran out. So repeats that
// keep more than 5% are fitted as steps only where they keep at most half of their rise (kStepsKeepAtMost)
// and the recording ends in no OOM (a real GPT loop that keeps each step's logits keeps 64 MiB of its 793 MiB
// rise, results/h200/growth-loops-580.159.04/); elsewhere the doctor says it cannot tell them apart rather
// than fit them: a leak of more than 5% a step that ends in the OOM it caused is not judged, and a snapshot
// dumped by hand inside a forward pass whose layers keep half or less of what they take would be taken for
// steps (a limit: the recorder writes at OOMs and at exit). A layer can keep less (a KV cache's share of an
// attention layer): its floors then rise within each pass and fall back at its end, so all of them rise less
// than half what one keeps, and the doctor says there is no growth over the recording; and where a
// recording that ends in an OOM ends within a step of the loop's end, a growth found says it may be a pass's
// layers. A loop whose steps differ (batches of varying length, a serving loop whose requests differ) has no
// period, and its growth is not judged either. On the 222 snapshots: the loop that
// keeps each step's loss tensor (results/h100/doctor-580.159.04/snapshots/leak_train) grows, its fix does
// not, 4 repeat but keep more (OOM snapshots of an encoder inside its forward pass and of a chunked pipeline
// that keeps each chunk's result), and 216 have no loop of repeating steps. On ten loops recorded for many
// steps (results/h200/growth-loops-580.159.04/), the three that keep something grow by what they keep (4
// bytes, 16 KiB and 64 MiB a step) and the seven that keep nothing do not.

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

// What one request of the walk (an alloc or a free) is to the step detector: which, and its bytes.
struct StepToken {
  replay::Action action = replay::Action::alloc;
  std::uint64_t bytes = 0;
  friend bool operator==(const StepToken&, const StepToken&) = default;
};

// Repeats that keep more than kGivenBack (growth.cpp) of their rise are fitted as steps only where they keep
// at most this share of it (a step's backward and optimizer give back most of what its forward took; a layer
// of a training pass keeps most of what it takes) and the recording ends in no OOM (Note [Steps are what
// repeats]).
inline constexpr double kStepsKeepAtMost = 0.5;

enum class StepsVerdict {
  no_repeat,   // no loop of repeating steps covers half the walk
  keeps_much,  // the requests repeat, but each repeat keeps more than kGivenBack of its rise: layers, or a
               // leak
  steps,       // a loop of steps that give back all but a little of what they take
};

struct Steps {
  StepsVerdict verdict = StepsVerdict::no_repeat;
  std::size_t period = 0;     // requests a step takes (0: no_repeat)
  std::vector<Floor> floors;  // steps: between each two steps of the loop, positions into the sequence given
  double kept = 0;            // the median a step keeps (floor to floor) and its median rise above its floor
  double rise = 0;
  std::size_t loop_end = 0;  // steps: where the loop ends, into the sequence given
};

// Note [Steps are what repeats]. `live` and `tokens` hold one entry per request, in order.
[[nodiscard]] Steps find_steps(const std::vector<std::int64_t>& live, const std::vector<StepToken>& tokens);

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
