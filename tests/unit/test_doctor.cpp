// memstress doctor on constructed traces (harness/doctor): the live walk and the sites at the peak, the
// floors and growth (a planted leak of one 512-byte block per step, and the same loop without it), the
// OOM's cause and the settings that grant it, the settings x capacities table and the recommended setting.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/doctor/doctor.hpp"
#include "harness/doctor/facts.hpp"
#include "harness/doctor/format.hpp"
#include "harness/doctor/growth.hpp"

namespace memstress::doctor {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;

// Builds a trace of one device with allocation sites, as the converter gives it.
class TraceBuilder {
 public:
  TraceBuilder() {
    input_.trace.name = "built.trace";
    input_.trace.devices = {"cuda:0"};
    input_.facts.source = "PyTorch memory snapshot";
    input_.facts.frames_recorded = true;
  }

  std::int32_t site(const std::string& where) {
    input_.facts.sites.push_back(Site{where, where, 1, "f", true, {where}});
    return static_cast<std::int32_t>(input_.facts.sites.size() - 1);
  }
  std::uint64_t alloc(std::uint64_t bytes, std::int32_t site = -1) {
    const std::uint64_t id = next_id_++;
    input_.facts.alloc_sites.push_back(site);
    push(replay::Action::alloc, id, bytes);
    return id;
  }
  void free(std::uint64_t id, std::uint64_t bytes) { push(replay::Action::free, id, bytes); }
  void segment(std::uint64_t bytes) { push(replay::Action::segment_alloc, next_segment_++, bytes); }
  void oom(std::uint64_t bytes, std::uint64_t device_free) {
    push(replay::Action::oom, 0, bytes);
    input_.facts.ooms.push_back(OomFact{"cuda:0", bytes, device_free, -1});
  }
  // An OOM the program died of on a second device, cuda:1.
  void oom_on_second_device(std::uint64_t bytes) {
    if (input_.trace.devices.size() < 2) {
      input_.trace.devices.emplace_back("cuda:1");
    }
    push(replay::Action::oom, 0, bytes);
    input_.trace.events.back().device = 1;
    input_.facts.ooms.push_back(OomFact{"cuda:1", bytes, 0, -1});
  }
  [[nodiscard]] const DoctorInput& input() const noexcept { return input_; }

 private:
  void push(replay::Action action, std::uint64_t id, std::uint64_t bytes) {
    replay::Event e;
    e.seq = input_.trace.events.size();
    e.time_ns = e.seq * 1000;
    e.id = id;
    e.bytes = bytes;
    e.action = action;
    input_.trace.events.push_back(e);
  }

  DoctorInput input_;
  std::uint64_t next_id_ = 0;
  std::uint64_t next_segment_ = 0;
};

// A training loop: weights, then `steps` steps of activations that come and go; with `leak`, each step
// also keeps its 512-byte loss (losses.append(loss) without .item()).
TraceBuilder training_loop(int steps, bool leak) {
  TraceBuilder b;
  const std::int32_t weights = b.site("model.py:10 in __init__");
  const std::int32_t activations = b.site("model.py:42 in forward");
  const std::int32_t loss = b.site("train.py:57 in <module>");
  b.alloc(64 * kMiB, weights);
  for (int s = 0; s < steps; ++s) {
    std::vector<std::uint64_t> acts;
    acts.reserve(8);
    for (int k = 0; k < 8; ++k) {
      acts.push_back(b.alloc(16 * kMiB, activations));
    }
    const std::uint64_t l = b.alloc(4, loss);
    for (const std::uint64_t a : acts) {
      b.free(a, 16 * kMiB);
    }
    if (!leak) {
      b.free(l, 4);
    }
  }
  return b;
}

TEST(DoctorGrowth, APlantedLeakOfOneLossPerStepIsFoundAndItsSiteNamed) {
  const TraceBuilder b = training_loop(20, /*leak=*/true);
  DoctorOptions options;
  options.capacities = {1ULL << 30};
  const DoctorReport r = diagnose(b.input(), options);
  EXPECT_EQ(r.growth.steps, StepsVerdict::steps);
  EXPECT_EQ(r.growth.step_requests, 17U);  // 9 allocations, 8 frees
  EXPECT_EQ(r.growth.floors.size(), 19U);  // between 20 steps
  EXPECT_TRUE(r.growth.fit.growing());
  EXPECT_DOUBLE_EQ(r.growth.fit.slope, 4.0);  // requested bytes: the program's own view
  ASSERT_EQ(r.growth.sites.size(), 1U);
  EXPECT_EQ(r.site_name(r.growth.sites.front().site), "train.py:57 in <module>");
  EXPECT_NE(format_doctor(r).find("-> Memory grows"), std::string::npos);
}

TEST(DoctorGrowth, TheSameLoopWithoutTheLeakDoesNotGrow) {
  const DoctorReport r = diagnose(training_loop(20, /*leak=*/false).input(), {});
  EXPECT_EQ(r.growth.floors.size(), 19U);
  EXPECT_FALSE(r.growth.fit.growing());
  EXPECT_TRUE(r.growth.sites.empty());
  EXPECT_NE(format_doctor(r).find("-> No growth"), std::string::npos);
}

// `steps` steps of 100 MiB of activations that keep `kept` each, and an OOM after them where `oom`.
TraceBuilder keeping_loop(int steps, std::uint64_t kept, bool oom) {
  TraceBuilder b;
  const std::int32_t keeps = b.site("train.py:60 in step");
  const std::int32_t activations = b.site("model.py:42 in forward");
  for (int step = 0; step < steps; ++step) {
    const std::uint64_t a = b.alloc(100 * kMiB, activations);
    b.alloc(kept, keeps);
    b.free(a, 100 * kMiB);
  }
  if (oom) {
    b.oom(100 * kMiB, 100ULL << 30);
  }
  return b;
}

TEST(DoctorGrowth, ALeakLargeBesideOneStepsSwingIsFoundToo) {
  // 100 MiB of activations a step, 4 MiB kept each time, 200 steps: the leak is eight swings in all.
  const DoctorReport r = diagnose(keeping_loop(200, 4 * kMiB, /*oom=*/false).input(), {});
  EXPECT_GE(r.growth.floors.size(), 190U);
  EXPECT_TRUE(r.growth.fit.growing());
  EXPECT_DOUBLE_EQ(r.growth.fit.slope, static_cast<double>(4 * kMiB));
  EXPECT_FALSE(r.growth.ends_in_the_loop);  // written at exit: no pass was cut short
  EXPECT_EQ(format_doctor(r).find("The recording ends inside the repeats"), std::string::npos);
  ASSERT_FALSE(r.growth.sites.empty());
  EXPECT_EQ(r.site_name(r.growth.sites.front().site), "train.py:60 in step");
}

TEST(DoctorGrowth, AGrowthThatEndsInAnOomInsideTheLoopMayBeAPassesLayers) {
  const DoctorReport r = diagnose(keeping_loop(200, 4 * kMiB, /*oom=*/true).input(), {});
  EXPECT_TRUE(r.growth.ends_at_oom);
  EXPECT_TRUE(r.growth.ends_in_the_loop);
  EXPECT_TRUE(r.growth.grows());
  EXPECT_NE(format_doctor(r).find("The recording ends inside the repeats"), std::string::npos);
}

TEST(DoctorGrowth, StepsThatKeepMuchInARecordingThatGoesOnGrow) {
  // A step keeps 30 MiB of the 130 MiB it takes (a step's outputs kept on the GPU): more than a step gives
  // back, but no pass was cut short by an OOM, so its floors are fitted.
  const DoctorReport r = diagnose(keeping_loop(40, 30 * kMiB, /*oom=*/false).input(), {});
  EXPECT_EQ(r.growth.steps, StepsVerdict::keeps_much);
  EXPECT_TRUE(r.growth.judged());
  EXPECT_TRUE(r.growth.grows());
  EXPECT_DOUBLE_EQ(r.growth.fit.slope, static_cast<double>(30 * kMiB));
  const std::string text = format_doctor(r);
  EXPECT_NE(text.find("-> Memory grows: about 30.00 MiB more is kept after every step"), std::string::npos)
      << text;
  EXPECT_NE(text.find("Each step keeps 30.00 MiB of the"), std::string::npos) << text;
  // The same loop that ends in an OOM is not judged: it may be the layers of the pass that ran out.
  const DoctorReport cut = diagnose(keeping_loop(40, 30 * kMiB, /*oom=*/true).input(), {});
  EXPECT_EQ(cut.growth.steps, StepsVerdict::keeps_much);
  EXPECT_FALSE(cut.growth.judged());
  EXPECT_FALSE(cut.growth.grows());
  EXPECT_TRUE(cut.growth.floors.empty());
  EXPECT_NE(format_doctor(cut).find("-> Not judged: the requests repeat every 3 allocations and frees"),
            std::string::npos);
}

// A forward pass of `layers` alike layers: each keeps its activations and frees its temporaries, so the dips
// between layers climb (Note [Steps are what repeats]). Without `backward` the step ends in an OOM there.
void forward_pass(TraceBuilder& b, std::int32_t site, int layers, std::uint64_t width, bool backward) {
  std::vector<std::uint64_t> kept;
  for (int layer = 0; layer < layers; ++layer) {
    kept.push_back(b.alloc(32 * width, site));
    const std::uint64_t scratch = b.alloc(16 * width, site);
    b.free(scratch, 16 * width);
  }
  if (!backward) {
    b.oom(64 * width, 100ULL << 30);
    return;
  }
  std::reverse(kept.begin(), kept.end());  // the backward pass frees the last layer's first
  for (const std::uint64_t id : kept) {
    b.free(id, 32 * width);
  }
}

TEST(DoctorGrowth, ALayerByLayerForwardPassThatRunsOutIsNotALeak) {
  // What an OOM snapshot of a CNN or a U-Net holds: a step, then the forward pass it died in. Its dips climb
  // a layer's activations at a time; taken for steps they read as a leak.
  TraceBuilder b;
  const std::int32_t layer = b.site("model.py:42 in forward");
  b.alloc(64 * kMiB, b.site("model.py:10 in __init__"));
  forward_pass(b, layer, 12, kMiB, /*backward=*/true);
  forward_pass(b, layer, 12, kMiB, /*backward=*/false);
  const DoctorReport r = diagnose(b.input(), {});
  // The layers repeat, but each keeps what it took: not steps.
  EXPECT_EQ(r.growth.steps, StepsVerdict::keeps_much);
  EXPECT_EQ(r.growth.step_requests, 3U);
  EXPECT_DOUBLE_EQ(r.growth.kept_per_step, static_cast<double>(32 * kMiB));
  EXPECT_TRUE(r.growth.floors.empty());
  EXPECT_FALSE(r.growth.fit.growing());
  const std::string text = format_doctor(r);
  EXPECT_NE(text.find("-> Not judged: the requests repeat every 3 allocations and frees, but each repeat "
                      "keeps 32.00 MiB"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("-> Memory grows"), std::string::npos);
}

// Layers of a forward pass that each keep 32 of the 48 MiB they take, and no OOM.
TraceBuilder layers_kept(int layers) {
  TraceBuilder b;
  const std::int32_t layer = b.site("model.py:42 in forward");
  b.alloc(64 * kMiB, b.site("model.py:10 in __init__"));
  for (int k = 0; k < layers; ++k) {
    b.alloc(32 * kMiB, layer);
    b.free(b.alloc(16 * kMiB, layer), 16 * kMiB);
  }
  return b;
}

TEST(DoctorGrowth, AForwardPassWrittenBeforeItsBackwardIsNotJudged) {
  // A snapshot dumped after model(x) and before backward(): no OOM, but each repeat keeps most of its rise.
  const DoctorReport r = diagnose(layers_kept(24).input(), {});
  EXPECT_EQ(r.growth.steps, StepsVerdict::keeps_much);
  EXPECT_FALSE(r.growth.ends_at_oom);
  EXPECT_FALSE(r.growth.judged());
  EXPECT_FALSE(r.growth.grows());
  EXPECT_NE(format_doctor(r).find("more than a step that gives back what it takes, most of it"),
            std::string::npos);
}

TEST(DoctorGrowth, APassThatRanOutAndWasSurvivedIsNotJudged) {
  TraceBuilder b = layers_kept(24);
  b.oom(256 * kMiB, 100ULL << 30);  // refused, survived
  b.alloc(512);
  const DoctorReport r = diagnose(b.input(), {});
  EXPECT_FALSE(r.growth.ends_at_oom);
  EXPECT_FALSE(r.growth.grows());
}

TEST(DoctorGrowth, AnOomOnAnotherDeviceEndsTheRecordingToo) {
  TraceBuilder b = keeping_loop(40, 30 * kMiB, /*oom=*/false);
  b.oom_on_second_device(kMiB);
  const DoctorReport r = diagnose(b.input(), {});
  EXPECT_TRUE(r.growth.ends_at_oom);
  EXPECT_EQ(r.growth.steps, StepsVerdict::keeps_much);
  EXPECT_FALSE(r.growth.judged());
  EXPECT_NE(format_doctor(r).find("and the recording ends in an OOM, perhaps inside the pass that ran out"),
            std::string::npos);
}

TEST(DoctorGrowth, BuildingAModelIsNoStep) {
  // 48 alike layers' weights, each kept whole, then one forward pass without grad, written at exit.
  TraceBuilder b;
  const std::int32_t weights = b.site("model.py:10 in __init__");
  for (int k = 0; k < 48; ++k) {
    b.alloc(4 * kMiB, weights);
    b.alloc(4 * kMiB, weights);
  }
  const std::int32_t forward = b.site("model.py:42 in forward");
  for (int k = 0; k < 48; ++k) {
    b.free(b.alloc(kMiB, forward), kMiB);
  }
  const DoctorReport r = diagnose(b.input(), {});
  EXPECT_FALSE(r.growth.grows());
  EXPECT_TRUE(r.growth.floors.empty());
}

TEST(DoctorGrowth, TwoStepsOfAlikeLayersAreNotFourSteps) {
  // Each layer repeats the last, but only within the forward pass: two steps are too few to judge.
  TraceBuilder b;
  const std::int32_t layer = b.site("model.py:42 in forward");
  for (int step = 0; step < 2; ++step) {
    forward_pass(b, layer, 24, kMiB, /*backward=*/true);
  }
  const DoctorReport r = diagnose(b.input(), {});
  EXPECT_NE(r.growth.steps, StepsVerdict::steps);
  EXPECT_FALSE(r.growth.fit.growing());
}

TEST(DoctorGrowth, AStepOfAlikeLayersIsOneStepAndItsLeakIsFound) {
  TraceBuilder b;
  const std::int32_t layer = b.site("model.py:42 in forward");
  const std::int32_t loss = b.site("train.py:57 in <module>");
  b.alloc(64 * kMiB, b.site("model.py:10 in __init__"));
  for (int step = 0; step < 10; ++step) {
    forward_pass(b, layer, 12, kMiB, /*backward=*/true);
    b.alloc(4, loss);  // kept: losses.append(loss)
  }
  const DoctorReport r = diagnose(b.input(), {});
  EXPECT_EQ(r.growth.steps, StepsVerdict::steps);
  EXPECT_EQ(r.growth.step_requests, 12U * 4 + 1);  // not a layer's 3 requests
  EXPECT_TRUE(r.growth.fit.growing());
  EXPECT_DOUBLE_EQ(r.growth.fit.slope, 4.0);
  ASSERT_FALSE(r.growth.sites.empty());
  EXPECT_EQ(r.site_name(r.growth.sites.front().site), "train.py:57 in <module>");
}

TEST(DoctorGrowth, StepsOfVaryingSizesAreNotJudged) {
  // Batches of varying length: no two steps ask for the same sizes, so no period is found; the doctor says
  // it does not judge rather than fit dips it cannot place.
  TraceBuilder b;
  const std::int32_t layer = b.site("model.py:42 in forward");
  for (int step = 0; step < 10; ++step) {
    forward_pass(b, layer, 6, kMiB + static_cast<std::uint64_t>(step) * 4096, /*backward=*/true);
  }
  const DoctorReport r = diagnose(b.input(), {});
  EXPECT_NE(r.growth.steps, StepsVerdict::steps);
  EXPECT_NE(format_doctor(r).find("-> Not judged"), std::string::npos);
}

TEST(DoctorGrowth, StepsAreTheSmallestPeriodThatRepeatsOverTheLoop) {
  // Steps of 3 requests (alloc 100, alloc 4, free 100) after a prelude that does not repeat (building the
  // model, `prelude` allocations of distinct sizes), then a tail that does not either.
  const auto walk = [](std::size_t prelude, std::size_t steps, std::size_t tail) {
    std::pair<std::vector<std::int64_t>, std::vector<StepToken>> w;
    std::int64_t bytes = 0;
    const auto request = [&](replay::Action action, std::uint64_t n) {
      bytes += action == replay::Action::alloc ? static_cast<std::int64_t>(n) : -static_cast<std::int64_t>(n);
      w.first.push_back(bytes);
      w.second.push_back(StepToken{action, n});
    };
    for (std::size_t k = 0; k < prelude; ++k) {
      request(replay::Action::alloc, 1000 + k);
    }
    for (std::size_t k = 0; k < steps; ++k) {
      request(replay::Action::alloc, 100);
      request(replay::Action::alloc, 4);
      request(replay::Action::free, 100);
    }
    for (std::size_t k = 0; k < tail; ++k) {
      request(replay::Action::alloc, 5000 + k);
    }
    return w;
  };
  for (const auto& [prelude, tail] : {std::pair<std::size_t, std::size_t>{1, 0}, {20, 0}, {30, 20}}) {
    const auto [live, tokens] = walk(prelude, 40, tail);
    const Steps steps = find_steps(live, tokens);
    EXPECT_EQ(steps.verdict, StepsVerdict::steps) << prelude;
    EXPECT_EQ(steps.period, 3U) << prelude;  // not twice it, which dilutes the prelude
    ASSERT_GE(steps.floors.size(), 36U) << prelude;
    EXPECT_EQ(steps.floors[2].bytes + 4, steps.floors[3].bytes);  // each step keeps its 4 bytes
    EXPECT_DOUBLE_EQ(steps.kept, 4.0);
  }
  const auto [live, tokens] = walk(1, 3, 0);
  EXPECT_EQ(find_steps(live, tokens).verdict, StepsVerdict::no_repeat);  // three steps: too few
  const auto [short_live, short_tokens] = walk(60, 12, 0);               // a loop of less than half the walk
  EXPECT_EQ(find_steps(short_live, short_tokens).verdict, StepsVerdict::no_repeat);
}

TEST(DoctorGrowth, ALeakInADeepModelsStepsIsFound) {
  // 48 alike layers a step (each request asked 48 times a step), weights that dwarf a step's swing, a prelude
  // and a tail: the step is found from its one request of a kind (the loss), and its 512-byte leak.
  TraceBuilder b;
  const std::int32_t layer = b.site("model.py:42 in forward");
  const std::int32_t loss = b.site("train.py:57 in <module>");
  const std::int32_t weights = b.site("model.py:10 in __init__");
  for (std::uint64_t w = 0; w < 200; ++w) {
    b.alloc(64 * kMiB + w * 4096, weights);
  }
  for (int step = 0; step < 10; ++step) {
    std::vector<std::uint64_t> acts;
    for (int k = 0; k < 48; ++k) {
      acts.push_back(b.alloc(kMiB, layer));
      b.free(b.alloc(kMiB / 2, layer), kMiB / 2);
    }
    b.alloc(512, loss);  // kept
    for (const std::uint64_t a : acts) {
      b.free(a, kMiB);
    }
  }
  for (std::uint64_t k = 0; k < 200; ++k) {  // an evaluation after the loop, longer than a step
    b.free(b.alloc(3 * kMiB + k, layer), 3 * kMiB + k);
  }
  const DoctorReport r = diagnose(b.input(), {});
  EXPECT_EQ(r.growth.steps, StepsVerdict::steps);
  EXPECT_EQ(r.growth.step_requests, 48U * 4 + 1);
  EXPECT_TRUE(r.growth.fit.growing());
  EXPECT_DOUBLE_EQ(r.growth.fit.slope, 512.0);
  EXPECT_FALSE(r.growth.ends_in_the_loop);
}

TEST(DoctorGrowth, AnAllocatorsSegmentsBetweenStepsDoNotHideThem) {
  // A leak makes the allocator reserve a segment now and then: its lines are no request and no step's.
  TraceBuilder b;
  const std::int32_t kept = b.site("train.py:60 in step");
  const std::int32_t activations = b.site("model.py:42 in forward");
  for (int step = 0; step < 40; ++step) {
    if (step % 3 == 0 || step % 7 == 0) {
      b.segment(20 * kMiB);
    }
    const std::uint64_t a = b.alloc(100 * kMiB, activations);
    b.alloc(1 * kMiB, kept);
    b.free(a, 100 * kMiB);
  }
  const DoctorReport r = diagnose(b.input(), {});
  EXPECT_EQ(r.growth.steps, StepsVerdict::steps);
  EXPECT_EQ(r.growth.step_requests, 3U);
  EXPECT_TRUE(r.growth.fit.growing());
  EXPECT_DOUBLE_EQ(r.growth.fit.slope, static_cast<double>(kMiB));
}

TEST(DoctorGrowth, PassesWhoseLayersKeepALittleAreNoGrowth) {
  // 8 inference passes of 60 alike layers, each layer keeping 1 MiB (its KV cache) of its 40 MiB rise and
  // freeing 8 temporaries, the cache freed when the pass ends: the layers repeat over 90% of the loop and
  // keep under 5% of their rise, so they pass for steps, but their floors fall back every pass.
  TraceBuilder b;
  const std::int32_t layer = b.site("model.py:42 in forward");
  b.alloc(64 * kMiB, b.site("model.py:10 in __init__"));
  for (int pass = 0; pass < 8; ++pass) {
    std::vector<std::uint64_t> cache;
    for (int k = 0; k < 60; ++k) {
      cache.push_back(b.alloc(kMiB, layer));
      for (int t = 0; t < 8; ++t) {
        b.free(b.alloc(39 * kMiB, layer), 39 * kMiB);
      }
    }
    for (const std::uint64_t c : cache) {
      b.free(c, kMiB);
    }
  }
  const DoctorReport r = diagnose(b.input(), {});
  EXPECT_FALSE(r.growth.grows());
  EXPECT_EQ(format_doctor(r).find("-> Memory grows"), std::string::npos) << format_doctor(r);
  EXPECT_EQ(r.growth.steps, StepsVerdict::steps);
  EXPECT_EQ(r.growth.step_requests, 17U);  // a layer's
  EXPECT_TRUE(r.growth.falls_back);
  EXPECT_NE(format_doctor(r).find("-> No growth over the recording"), std::string::npos);
}

TEST(DoctorGrowth, AStepThatGivesBackMoreThanItTookIsNoStep) {
  // Forward layers that keep 8 MiB and a backward pass that frees it: a period over a forward layer and a
  // backward one keeps -8 MiB or +8 MiB, never a step's little (Note [Steps are what repeats]).
  std::vector<std::int64_t> live;
  std::vector<StepToken> tokens;
  std::int64_t bytes = 0;
  const auto request = [&](replay::Action action, std::uint64_t n) {
    bytes += action == replay::Action::alloc ? static_cast<std::int64_t>(n) : -static_cast<std::int64_t>(n);
    live.push_back(bytes);
    tokens.push_back(StepToken{action, n});
  };
  for (int step = 0; step < 12; ++step) {
    for (int k = 0; k < 6; ++k) {
      request(replay::Action::alloc, 8 * kMiB);
    }
    for (int k = 0; k < 6; ++k) {
      request(replay::Action::free, 8 * kMiB);
    }
  }
  const Steps steps = find_steps(live, tokens);
  EXPECT_EQ(steps.period, 12U);
  EXPECT_EQ(steps.verdict, StepsVerdict::steps);
}

TEST(DoctorGrowth, AOneTimeJumpIsNotGrowth) {
  // Optimizer state appears after the first step and stays: Theil-Sen's slope is 0.
  const LineFit fit = fit_steps({100, 200, 200, 200, 200, 200, 200});
  EXPECT_DOUBLE_EQ(fit.slope, 0.0);
  EXPECT_FALSE(fit.growing());
  EXPECT_TRUE(fit_steps({100, 101, 102, 103, 104}).growing());
  EXPECT_FALSE(fit_steps({100, 101, 102}).growing());  // too few floors
}

TEST(DoctorPeak, TheSitesAtThePeakAreTheLiveAllocationsByLine) {
  DoctorOptions options;
  options.flags.alloc_conf = "--alloc-conf";  // the command's flag, named in the advice
  const DoctorReport r = diagnose(training_loop(3, /*leak=*/false).input(), options);
  EXPECT_EQ(r.live_at_peak, static_cast<std::int64_t>(64 * kMiB + kMiB * 8 * 16 + 4));
  ASSERT_EQ(r.sites_at_peak.size(), 3U);
  EXPECT_EQ(r.site_name(r.sites_at_peak[0].site), "model.py:42 in forward");
  EXPECT_EQ(r.sites_at_peak[0].count, 8U);
  EXPECT_EQ(r.sites_at_peak[0].bytes, 128 * kMiB);
  EXPECT_EQ(r.site_name(r.sites_at_peak[1].site), "model.py:10 in __init__");
  EXPECT_EQ(r.needed.peak_event, 10U);  // the weights, 8 activations, the loss
  EXPECT_EQ(r.setting_origin, "assumed: PyTorch's defaults (the input does not say; give --alloc-conf)");
}

TEST(DoctorPeak, TopSitesAreCappedWithTheRestInOneRow) {
  TraceBuilder b;
  for (int i = 0; i < 5; ++i) {
    b.alloc(static_cast<std::uint64_t>(i + 1) * kMiB, b.site("s" + std::to_string(i)));
  }
  DoctorOptions options;
  options.top_sites = 2;
  const DoctorReport r = diagnose(b.input(), options);
  ASSERT_EQ(r.sites_at_peak.size(), 3U);
  EXPECT_EQ(r.sites_at_peak[2].site, kOtherSites);
  EXPECT_EQ(r.sites_at_peak[2].bytes, 6 * kMiB);
}

// Twenty 8 MiB blocks fill ten 20 MiB segments (the caching allocator puts requests of 1-10 MiB in 20 MiB
// segments and splits them); every other block is freed, so each segment keeps one block in use and
// 12 MiB free. A 16 MiB request (a 16 MiB segment) then fails with 10 MiB free on the device and 120 MiB free
// in the cache, in pieces: fragmentation, with room to spare under expandable segments.
TraceBuilder fragmented_oom() {
  TraceBuilder b;
  const std::int32_t site = b.site("train.py:80 in step");
  std::vector<std::uint64_t> ids;
  for (int i = 0; i < 20; ++i) {
    if (i % 2 == 0) {
      b.segment(20 * kMiB);
    }
    ids.push_back(b.alloc(8 * kMiB, site));
  }
  for (int i = 1; i < 20; i += 2) {
    b.free(ids[static_cast<std::size_t>(i)], 8 * kMiB);
  }
  b.oom(16 * kMiB, 10 * kMiB);
  return b;
}

TEST(DoctorOom, FragmentationIsToldFromExhaustionAndTheSettingsThatGrantItAreReplayed) {
  const DoctorReport r = diagnose(fragmented_oom().input(), {});
  ASSERT_TRUE(r.oom.has_value());
  const OomAnalysis& o = *r.oom;
  EXPECT_EQ(o.count, 1U);
  EXPECT_EQ(o.recorded_reserved, static_cast<std::int64_t>(200 * kMiB));
  EXPECT_EQ(o.capacity(), 210 * kMiB);  // reserved + device_free
  EXPECT_EQ(o.limit->source, LimitSource::device);
  EXPECT_EQ(o.allocated, static_cast<std::int64_t>(80 * kMiB));
  EXPECT_EQ(o.reproduced, true);  // PyTorch's defaults refuse it in replay too
  EXPECT_EQ(o.cause, OomCause::fragmentation);
  const auto granted = [&](const std::string& allocator) {
    return std::any_of(o.would_grant.begin(), o.would_grant.end(),
                       [&](const GrantingSetting& g) { return g.setting.allocator == allocator; });
  };
  EXPECT_TRUE(granted("expandable"));
  EXPECT_EQ(r.capacities, std::vector<std::uint64_t>{210 * kMiB});
  EXPECT_NE(format_doctor(r).find("-> Fragmentation"), std::string::npos);
}

TEST(DoctorOom, TheSettingItRanWithDoesNotFitWhereItRanOut) {
  // The settings table must agree with the OOM: the request that failed is tried in every capacity replay.
  const DoctorReport r = diagnose(fragmented_oom().input(), {});
  ASSERT_TRUE(r.settings.recorded.has_value());
  const SettingRow& ran = r.settings.rows[*r.settings.recorded];
  ASSERT_EQ(ran.verdicts.size(), 1U);
  EXPECT_FALSE(ran.verdicts[0].fits);
  ASSERT_TRUE(ran.verdicts[0].oom.has_value());
  EXPECT_EQ(ran.verdicts[0].oom->request, 16 * kMiB);
  EXPECT_EQ(ran.verdicts[0].oom->event, r.oom->at.event);
  const auto expandable =
      std::find_if(r.settings.rows.begin(), r.settings.rows.end(), [](const SettingRow& row) {
        return row.setting.allocator == "expandable" && row.setting.conf.text.empty();
      });
  ASSERT_NE(expandable, r.settings.rows.end());
  EXPECT_TRUE(expandable->verdicts[0].fits);  // as the OOM section says: expandable grants it
}

TEST(DoctorOom, WhatItNeededDoesNotDependOnTheCapacitiesAskedAbout) {
  const DoctorInput in = training_loop(3, false).input();
  DoctorOptions small_first;
  small_first.capacities = {80 * kMiB, 1ULL << 30};
  DoctorOptions large_first;
  large_first.capacities = {1ULL << 30, 80 * kMiB};
  const DoctorReport a = diagnose(in, small_first);
  const DoctorReport b = diagnose(in, large_first);
  EXPECT_EQ(a.needed.peak_reserved, b.needed.peak_reserved);
  EXPECT_EQ(a.needed.peak_allocated, static_cast<std::int64_t>(64 * kMiB + kMiB * 8 * 16 + 512));
  EXPECT_EQ(a.needed.on, "on a device with no limit");
}

TEST(DoctorOom, MoreThanTheCapacityIsExhaustion) {
  TraceBuilder b;
  b.segment(64 * kMiB);
  b.alloc(64 * kMiB);
  b.oom(64 * kMiB, 16 * kMiB);
  const DoctorReport r = diagnose(b.input(), {});
  ASSERT_TRUE(r.oom.has_value());
  EXPECT_EQ(r.oom->cause, OomCause::exhaustion);
  EXPECT_TRUE(r.oom->would_grant.empty());  // 64 MiB live + 64 MiB asked > 80 MiB: no setting can
  EXPECT_NE(format_doctor(r).find("-> Exhaustion"), std::string::npos);
}

TEST(DoctorOom, ACapIsInferredWhereTheDeviceHadFarMoreFreeThanTheSegmentRefused) {
  // A process capped by set_per_process_memory_fraction: 64 MiB held, 64 MiB refused, 10 GiB free on the
  // device.
  TraceBuilder b;
  b.segment(64 * kMiB);
  b.alloc(64 * kMiB);
  b.oom(64 * kMiB, kMiB * 10 * 1024);
  const DoctorReport r = diagnose(b.input(), {});
  ASSERT_TRUE(r.oom.has_value());
  ASSERT_TRUE(r.oom->limit.has_value());
  EXPECT_EQ(r.oom->limit->source, LimitSource::inferred);
  EXPECT_EQ(r.oom->limit->bytes, 64 * kMiB);  // what it held: the cap lies in [64 MiB, 128 MiB)
  EXPECT_EQ(r.oom->limit->upper, 128 * kMiB);
  EXPECT_EQ(r.oom->cause, OomCause::exhaustion);
  EXPECT_EQ(r.capacities, std::vector<std::uint64_t>{64 * kMiB});  // the limit drives the settings table
  EXPECT_FALSE(r.settings.recommended.has_value());
  EXPECT_NE(format_doctor(r).find("a limit of about 64.00 MiB was in force"), std::string::npos);
}

TEST(DoctorOom, ARequestTheReplayGrantsIsNotReproducedAndNothingIsRecommended) {
  TraceBuilder b;
  b.segment(64 * kMiB);
  b.alloc(64 * kMiB);
  b.oom(64 * kMiB, 16 * kMiB);
  DoctorOptions options;
  options.capacities = {1024 * kMiB};  // --capacity: far more than the program had
  const DoctorReport r = diagnose(b.input(), options);
  ASSERT_TRUE(r.oom.has_value());
  EXPECT_EQ(r.oom->limit->source, LimitSource::given);
  EXPECT_EQ(r.oom->cause, OomCause::not_reproduced);
  EXPECT_FALSE(r.settings.recommended.has_value());
  EXPECT_NE(format_doctor(r).find("-> Not reproduced"), std::string::npos);
}

// cuDNN asks for an 88 MiB workspace, is refused, and runs an algorithm that needs less (an allocation
// follows the refusal); then a request of `last`, refused too, and an allocation after it unless `dies`.
TraceBuilder refused_workspace_then(std::uint64_t last, bool dies) {
  TraceBuilder b;
  b.segment(64 * kMiB);
  b.alloc(64 * kMiB);
  b.oom(88 * kMiB, kMiB * 10 * 1024);
  b.alloc(4 * kMiB);
  b.oom(last, kMiB * 10 * 1024);
  if (!dies) {
    b.alloc(2 * kMiB);
  }
  return b;
}

TEST(DoctorOom, RefusalsTheProgramWentOnAfterAreCountedNotJudged) {
  // Every refusal survived: the program did not run out, but it ran at the edge of its limit.
  const TraceBuilder b = refused_workspace_then(98 * kMiB, false);
  const DoctorReport r = diagnose(b.input(), {});
  EXPECT_FALSE(r.oom.has_value());
  ASSERT_TRUE(r.refusals.has_value());
  EXPECT_EQ(r.refusals->count, 2U);
  EXPECT_EQ(r.refusals->largest, 98 * kMiB);
  EXPECT_NE(format_doctor(r).find("PyTorch refused it 2 requests (the largest 98.00 MiB) and it went on"),
            std::string::npos);
  const nlohmann::json doc = doctor_document(r);
  EXPECT_EQ(doc["refusals_survived"]["count"], 2);
  EXPECT_EQ(doc["refusals_survived"]["largest_request"], 98 * kMiB);
}

TEST(DoctorOom, OneRefusalSurvivedIsToldInTheSingular) {
  TraceBuilder b;
  b.segment(64 * kMiB);
  b.alloc(64 * kMiB);
  b.oom(88 * kMiB, kMiB * 10 * 1024);
  b.alloc(4 * kMiB);
  const DoctorReport r = diagnose(b.input(), {});
  ASSERT_TRUE(r.refusals.has_value());
  EXPECT_NE(format_doctor(r).find("PyTorch refused it one request, of 88.00 MiB, and it went on"),
            std::string::npos);
}

TEST(DoctorOom, ARefusalItDiedOfIsTheOomAndTheOthersAreItsSurvivedOnes) {
  const TraceBuilder b = refused_workspace_then(64 * kMiB, true);
  const DoctorReport r = diagnose(b.input(), {});
  ASSERT_TRUE(r.oom.has_value());
  EXPECT_EQ(r.oom->survived, 1U);
  EXPECT_FALSE(r.refusals.has_value());
  EXPECT_TRUE(doctor_document(r)["refusals_survived"].is_null());
}

TEST(DoctorOom, TheWholeStepDecidesWhereTwoBatchRunsAreGiven) {
  OomAnalysis base;
  base.limit = Limit{100 * kMiB, LimitSource::given, "--capacity", std::nullopt, std::nullopt};
  base.cause = OomCause::at_the_limit;
  base.would_grant = {{{"expandable", {}}, 95 * kMiB},
                      {{"caching", AllocConfig::parse("max_split_size_mb:64", "conf")}, 96 * kMiB}};
  base.named = 0;
  // The pessimistic step fits under the second only: fragmentation, and that one named.
  OomAnalysis a = base;
  decide_by_the_whole_step(a, [](const replay::SweepSetting& s, bool) { return s.allocator == "caching"; });
  EXPECT_EQ(a.cause, OomCause::fragmentation);
  EXPECT_EQ(a.named, 1U);
  EXPECT_TRUE(a.decided_by_the_step);
  // It fits by the estimate alone: still at the limit.
  a = base;
  decide_by_the_whole_step(a, [](const replay::SweepSetting&, bool pessimistic) { return !pessimistic; });
  EXPECT_EQ(a.cause, OomCause::at_the_limit);
  // Under none: exhaustion.
  a = base;
  decide_by_the_whole_step(a, [](const replay::SweepSetting&, bool) { return false; });
  EXPECT_EQ(a.cause, OomCause::exhaustion);
  // An exhaustion (no setting granted the request) stays one.
  a = base;
  a.cause = OomCause::exhaustion;
  decide_by_the_whole_step(a, [](const replay::SweepSetting&, bool) { return true; });
  EXPECT_EQ(a.cause, OomCause::exhaustion);
}

TEST(DoctorSettings, EachCapacityIsJudgedAndWhereItRunsOutIsNamed) {
  const TraceBuilder b = training_loop(3, /*leak=*/false);
  DoctorOptions options;
  options.capacities = {150 * kMiB, 1ULL << 30};
  const DoctorReport r = diagnose(b.input(), options);
  ASSERT_EQ(r.settings.rows.size(), 49U);
  for (const SettingRow& row : r.settings.rows) {
    ASSERT_EQ(row.verdicts.size(), 2U);
    EXPECT_TRUE(row.verdicts[1].fits) << pytorch_conf(row.setting);
    // 192 MiB are live at the peak: no setting fits in 150 MiB, and each replay says where it ran out.
    EXPECT_FALSE(row.verdicts[0].fits) << pytorch_conf(row.setting);
    ASSERT_TRUE(row.verdicts[0].oom.has_value());
    EXPECT_EQ(row.verdicts[0].oom->request, 16 * kMiB);
    EXPECT_EQ(r.site_name(row.verdicts[0].oom->site), "model.py:42 in forward");
  }
  ASSERT_TRUE(r.settings.recommended.has_value());
  EXPECT_NE(r.settings.rows[*r.settings.recommended].setting.allocator, "direct");
  ASSERT_TRUE(r.settings.recorded.has_value());
  EXPECT_EQ(pytorch_conf(r.settings.rows[*r.settings.recorded].setting), "");
}

TEST(DoctorSettings, TheRecordedSettingIsTakenFromTheSnapshotOrTheFlag) {
  TraceBuilder b = training_loop(2, false);
  DoctorInput input = b.input();
  input.facts.alloc_conf = "expandable_segments:True,max_split_size_mb:256";
  const DoctorReport r = diagnose(input, {});
  EXPECT_EQ(r.setting.allocator, "expandable");
  EXPECT_EQ(r.setting.conf.text, "max_split_size_mb:256");
  EXPECT_EQ(r.setting_origin, "the snapshot");
  ASSERT_TRUE(r.settings.recorded.has_value());  // not of the grid: added to it
  EXPECT_EQ(r.settings.rows.size(), 50U);
  EXPECT_EQ(setting_from_pytorch_conf("backend:cudaMallocAsync", "x").allocator, "async");
  EXPECT_EQ(pytorch_conf(setting_from_pytorch_conf("backend:cudaMallocAsync", "x")),
            "backend:cudaMallocAsync");
  DoctorOptions given;  // the command's --alloc-conf wins over the snapshot's, named by its flag
  given.alloc_conf = AllocConfig::parse("max_split_size_mb:64", "--alloc-conf");
  given.flags.alloc_conf = "--alloc-conf";
  const DoctorReport g = diagnose(input, given);
  EXPECT_EQ(g.setting.allocator, "caching");
  EXPECT_EQ(g.setting.conf.text, "max_split_size_mb:64");
  EXPECT_EQ(g.setting_origin, "--alloc-conf");
  // A part in brackets is one part: the setting keeps it whole, without expandable_segments.
  const replay::SweepSetting bracketed =
      setting_from_pytorch_conf("roundup_power2_divisions:[256:1,>:4],expandable_segments:True", "x");
  EXPECT_EQ(bracketed.allocator, "expandable");
  EXPECT_EQ(bracketed.conf.text, "roundup_power2_divisions:[256:1,>:4]");
  EXPECT_EQ(knobs(bracketed), 2U);
  input.facts.alloc_conf = "max_split_size_mb:lots";
  EXPECT_THROW((void)diagnose(input, {}), InputError);
}

TEST(DoctorDocument, HasEverySection) {
  const nlohmann::json doc = doctor_document(diagnose(fragmented_oom().input(), {}));
  EXPECT_EQ(doc["schema"], "memstress.doctor/1");
  for (const char* key :
       {"input", "setting", "needed", "sites", "at_peak", "oom", "settings", "growth", "timeline"}) {
    EXPECT_TRUE(doc.contains(key)) << key;
  }
  EXPECT_EQ(doc["oom"]["cause"], "fragmentation");
}

// The converter's facts, read as input (fuzz/snapshot_facts.cpp holds the same promise): every site handed
// out is one of the file's sites or a marker, so the doctor's tables index nothing out of range.
// A file of the test's own (the process id in its name), removed when the test's files go.
class FactsFiles {
 public:
  FactsFiles() = default;
  FactsFiles(const FactsFiles&) = delete;
  FactsFiles& operator=(const FactsFiles&) = delete;
  FactsFiles(FactsFiles&&) = delete;
  FactsFiles& operator=(FactsFiles&&) = delete;
  ~FactsFiles() {
    for (const std::filesystem::path& p : paths_) {
      std::error_code ignored;
      std::filesystem::remove(p, ignored);
    }
  }
  std::filesystem::path write(const std::string& name, const std::string& text) {
    std::filesystem::path path = std::filesystem::temp_directory_path() /
                                 ("memstress-test-" + std::to_string(::getpid()) + "-" + name);
    std::ofstream(path) << text;
    paths_.push_back(path);
    return path;
  }

 private:
  std::vector<std::filesystem::path> paths_;
};

const std::string kOneSite =
    R"({"schema": "memstress.snapshot-facts/1", "source": "PyTorch memory snapshot", "frames_recorded": true,
        "sites": [{"where": "train.py:3 in f", "filename": "train.py", "line": 3, "function": "f",
                   "user_code": true, "stack": []}],
        "alloc_sites": [0, -1, -2], "ooms": [{"device": "cuda:0", "bytes": 512, "site": SITE}]})";

std::string with_oom_site(const std::string& site) {
  std::string text = kOneSite;
  text.replace(text.find("SITE"), 4, site);
  return text;
}

TEST(DoctorFacts, SitesOutOfRangeAreRefusedNamingTheFile) {
  FactsFiles files;
  const auto facts_file = [&](const std::string& name, const std::string& text) {
    return files.write(name, text);
  };
  const SnapshotFacts ok = read_facts(facts_file("ok.json", with_oom_site("0")), "ok.pickle");
  EXPECT_EQ(ok.site_of(0), 0);
  EXPECT_EQ(ok.site_of(2), kBeforeRecording);
  EXPECT_EQ(ok.ooms.at(0).site, 0);
  for (const std::string site : {"1", "-3"}) {
    try {
      static_cast<void>(read_facts(facts_file("bad.json", with_oom_site(site)), "bad.pickle"));
      ADD_FAILURE() << "an OOM at site " << site << " of 1 was read";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()),
                "bad.pickle: the converter's facts: field ooms[0].site: expected a whole "
                "number from -2 to 0, found a number (" +
                    site + ")");
    }
  }
  // The fuzzer's second finding: a file with no sites, and an allocation at site 1.
  const std::string no_sites =
      R"({"schema": "memstress.snapshot-facts/1", "source": "PyTorch memory snapshot", "frames_recorded": false,
          "sites": [], "alloc_sites": [1, -1], "ooms": []})";
  try {
    static_cast<void>(read_facts(facts_file("no-sites.json", no_sites), "no-sites.pickle"));
    ADD_FAILURE() << "an allocation at site 1 of none was read: " << no_sites;
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "no-sites.pickle: the converter's facts: field alloc_sites[0]: expected a whole "
              "number from -2 to -1, found a number (1)");
  }
  // The fuzzer's first finding: a float beyond 2^64 where a whole number of bytes is read was converted
  // anyway (undefined behaviour), in segment_addresses and in an OOM's bytes alike.
  const std::string bytes_text = R"("bytes": 512)";
  for (const auto& [from, to] : {std::pair<std::string, std::string>{bytes_text, R"("bytes": 1.4e24)"},
                                 {R"("alloc_sites")", R"("segment_addresses": [1.4e24], "alloc_sites")"}}) {
    std::string huge = with_oom_site("0");
    huge.replace(huge.find(from), from.size(), to);
    try {
      static_cast<void>(read_facts(facts_file("huge.json", huge), "huge.pickle"));
      ADD_FAILURE() << "read: " << huge;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("expected a whole number, 0 or more, found a number (1.4e+24)"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(static_cast<void>(read_facts(facts_file("schema.json", R"({"schema": 1})"), "schema.pickle")),
               InputError);
}

TEST(DoctorFacts, MarksAreReadByAllocationAndOutOfRangeOnesRefused) {
  FactsFiles files;
  std::string marked = with_oom_site("0");
  const std::string at = "\"ooms\"";
  marked.replace(marked.find(at), at.size(),
                 R"("marks": ["memstress.convolution", "mine"], "alloc_marks": [-1, 0, 1], "ooms")");
  const SnapshotFacts f = read_facts(files.write("marked.json", marked), "marked.pickle");
  EXPECT_EQ(f.marks, (std::vector<std::string>{"memstress.convolution", "mine"}));
  EXPECT_FALSE(f.marked(0, kConvolutionMark));
  EXPECT_TRUE(f.marked(1, kConvolutionMark));
  EXPECT_FALSE(f.marked(2, kConvolutionMark));
  EXPECT_TRUE(f.marked(2, "mine"));
  EXPECT_FALSE(f.marked(3, kConvolutionMark));  // beyond the list: none
  EXPECT_FALSE(read_facts(files.write("plain.json", with_oom_site("0")), "plain.pickle").marked(1, "mine"));
  std::string bad = marked;
  bad.replace(bad.find("[-1, 0, 1]"), 10, "[-1, 0, 2]");
  try {
    static_cast<void>(read_facts(files.write("bad-mark.json", bad), "bad-mark.pickle"));
    ADD_FAILURE() << "a mark beyond the list was read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "bad-mark.pickle: the converter's facts: field alloc_marks[2]: expected a whole number from -1 "
              "to 1, found a number (2)");
  }
  std::string unindexed = marked;
  const std::string list = R"("alloc_marks": [-1, 0, 1], )";
  unindexed.erase(unindexed.find(list), list.size());
  try {
    static_cast<void>(read_facts(files.write("unindexed.json", unindexed), "unindexed.pickle"));
    ADD_FAILURE() << "marks without alloc_marks were read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unindexed.pickle: the converter's facts: "), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("alloc_marks"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace memstress::doctor
