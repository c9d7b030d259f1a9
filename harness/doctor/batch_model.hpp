#pragma once

// `memstress predict-batch`: the program at any batch size, from two recordings at two sizes.
//
// Note [A request as a function of the batch]. Of the two runs, the one at the larger batch is A, the
// template, and the other B. A request matched between them (harness/doctor/batch_match.hpp) that kept
// its size does not depend on the batch (weights, their gradients, the optimizer's state). One that grew
// about as the batch did (its sizes' ratio within a factor kBatchLike of the batches' ratio) is a tensor
// of the batch (activations, their gradients, attention scores, logits), taken to be linear in it:
// s_A + (s_A - s_B) (N - A) / (A - B), exact for what is proportional to the batch and for a fixed part
// beside it. Anything else is a library's workspace, chosen per shape; two points say nothing of its
// law, and extrapolating one linearly ran a GPT's predicted peak far above PyTorch's, so it is held at
// the larger of its two sizes. A program also asks for more or fewer requests at other batch sizes (on an
// H100, a GPT with checkpointing made 42 more requests at batch 8 than at 2 and 4): what neither run made
// cannot be predicted, and the count of what could not be matched is reported. That is also why the run
// at the larger batch is the template: a program's requests at large batches resemble those at the
// larger of two small batches more (that GPT's largest batch under a cap, predicted from 2 and 4 with the
// run at 2 as the template, came out 76 against PyTorch's 97, and 97 from 4 and 8). The template's events
// are kept in order, each allocation resized (requests it alone made keep their size; the other run's
// own requests are left out), its recorded allocator's segment lines and OOMs dropped, since a replay
// makes its own. The largest batch that fits is then searched by replay: doubling until it does not fit,
// then bisecting, then scanning below (Note [Fitting is not monotonic]); a batch fits when its replay under
// the setting on a device of the capacity ends with no OOM.
//
// Note [Fitting is not monotonic]. Near the limit, whether a batch fits is not monotonic in the batch: a
// request that crosses a size class, or a cached block split one way rather than another, can leave a
// larger batch room that a smaller one lacks. On the proof corpus, the replay of a KV-cache generator
// under a 4 GiB cap runs out at batches 969, 970, 973 to 975 and 981 and fits at 968, 971, 972 and 998 to
// 1000 (at 968 and 969 it gives PyTorch's own peaks and OOM to the byte); bisection named 1000, PyTorch's
// own bisection 968. A user takes any batch up to the answer, so the answer is the largest batch below the
// first that does not fit, as far as a scan can tell: after bisecting, the batches below the answer are
// replayed one by one, down to batch 1, the answer moving below each that does not fit, until kScanFits
// fit in a row, or one fits with its largest request to spare below the capacity (a heuristic: one
// request placed differently is the usual way a batch runs out there, not a bound on every placement), or
// kScanMost were replayed. There the scan finds 909, 910, 911 and 917 and names 908, and PyTorch ran out
// at each of those four and ran 908 (results/h100/doctor-corpus-580.159.04/islands.json). The scan is the
// model's only: the pessimistic model inflates its requests on purpose, so where its replay runs out below
// its answer tells of sizes it made up, not of PyTorch (on the corpus it ran out at batches PyTorch ran);
// its search stops at the estimate, and the batch it names is replayed by the model too (one lower while
// the model runs out there).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "harness/doctor/batch_match.hpp"
#include "harness/doctor/settings.hpp"

namespace memstress::doctor {

inline constexpr double kBatchLike = 1.25;

// Note [Fitting is not monotonic]: the fits in a row that end the scan below an answer, and the most batches
// it replays.
inline constexpr std::uint64_t kScanFits = 32;
inline constexpr std::uint64_t kScanMost = 256;

// Note [The batch that is safe]. The answer's replay is a model's, and a model can be over: the largest
// batch named must run. A second, pessimistic model gives the safe end of the range: each request that
// grew as a tensor of the batch grows kSlopeMargin faster, and each workspace held at the larger of its
// two sizes (two points say nothing of its law) is extrapolated linearly instead where it grew with the
// batch. Between the recorded batches and the answer a request can also cross a size class of the
// allocator (the small pool, the 20 MiB segments, rounding): the replays model those rules exactly, on
// the sizes each model gives. The range is [safe, estimate]; predict-batch names the safe end.
inline constexpr double kSlopeMargin = 0.03;

// Note [A workspace PyTorch does without]. PyTorch's cuDNN convolutions try one plan after another, each with
// the workspace it asks for, and go on to the next where the caching allocator refuses one (the OOM caught,
// after the allocator gave back its cache), down to plans that need little or none. A U-Net recorded on an
// H200 under a 2 GiB cap ran batch 43 through 64 refusals: one convolution was refused 172 MiB 19 times and
// ran with 27 MiB, another 258 MiB 26 times and ran with 43 MiB, three ran with none
// (results/h200/unet-edge-580.159.04/b43.pickle.gz). Such a refusal is no OOM, and a model that made it one
// named 39 there, and 78 where PyTorch ran 86 under 4 GiB on an H100. The trace alone cannot tell those
// workspaces from one PyTorch cannot do without (an attention kernel's, also allocated and freed around one
// kernel, and in the backward pass with no Python frames either), so the recorder marks what a convolution
// allocates (Note [Marking the convolutions], python/memstress/recorder_marks.py). A request marked so in
// both runs, freed by the next line of its device in both (asked for around one kernel) and changed with the
// batch is a workspace the replay lets be refused: the allocator gives back its cache as PyTorch's does, the
// refusal is counted, and the model goes on without it. The pessimistic model settles for the smaller of its
// two recorded sizes, which a plan ran with, and runs out where that is refused too: the fallbacks seen were
// below it (27 and 43 MiB where batch 10 had been granted 40 and 60 MiB). Settling for the larger instead,
// the safe end for a ResNet that PyTorch ran at 167 under 2 GiB on the H200 was 155; settling for the
// smaller, 161. The estimate, without any, can lie a batch or two above PyTorch's largest: the range's high
// end. Two limits: the fallback stays at its size at the smaller batch however far the answer lies beyond it
// (seen on two networks, within about four times the batches recorded); and the replay is refused in every
// step it replays, giving back its cache each time, where PyTorch keeps the plan that ran after the first
// step and asks for its workspace alone. A plain PyTorch snapshot has no marks: every refusal is an OOM
// there, and the answer for a convolutional network may be low.

// Below this share of either run's requests matched, or matched by position alone, the model is said to be
// unreliable, and no batch is named safe: on the proof corpus, a program whose batches vary within a run was
// matched so and predicted 78% above PyTorch's largest batch.
inline constexpr double kWellMatched = 0.9;

// Note [A reduction's scratch stops growing]. PyTorch's sum over the rows of a matrix (a Linear layer's bias
// gradient in the backward pass: the batch's rows summed for each of N outputs) splits the rows between
// blocks, and where there are many it asks for a scratch buffer for the blocks' partial sums and, right
// after it, 4 bytes of semaphores per group of 128 outputs (g groups), frees those, then the scratch
// (ATen's Reduce.cuh, setReduceConfig; CUDA's: ROCm's law differs, and its recordings carry no figures). With
// four outputs a thread and a 4-byte accumulator the scratch is 65536 g bytes per block a group: it grows
// with the rows, 8 N bytes a row, until the blocks fill one wave of the GPU, ceil(T / g) a group with
// T = multiprocessors x threads a multiprocessor / 128, and then grows at a sixteenth of that pace, from
// 1024 ceil(T / g) rows. On an H100 or H200 (T = 2112) that wave is 132 MiB where g divides 2112, a little
// more elsewhere (136 MiB at g = 128): on the proof corpus an encoder's 2048-wide layer reaches it at batch
// 33, between the batches recorded and the answer, and the linear model grew it to 188 MiB at 47. So a
// request made in that pattern in both runs, a multiple of 65536 g bytes in both, is held to whole blocks and
// capped at the wave in both models; past the wave it grows at a sixteenth of its pace in the run below the
// cap (the other run may sit at the cap, and its pace would be too low). The sum's output, allocated right
// before the scratch, must be at most 512 g bytes: then the accumulator's bytes a block (its size x 128 an
// output) are at most 65536 g for a sum or a mean of any type (fp64's 8-byte accumulator has an 8-byte
// output), not for a variance or an argmax, whose accumulators are larger than their outputs: those, like any
// other request, grow as before, which is never below what PyTorch asks for. The cap needs the GPU's figures:
// the recorder stores multiprocessors and threads_per_multiprocessor; predict-batch --multiprocessors gives
// them for a snapshot without (then 2048 threads are assumed, the most of any GPU: a larger T only raises
// the cap). The recorded figures hold only for the GPU recorded on: a capacity above its memory is another
// GPU, perhaps with a larger wave, and nothing is capped.
struct GpuShape {
  std::uint64_t multiprocessors = 0;
  std::uint64_t threads_per_multiprocessor = 2048;
};

// The GPU the runs are judged for: `given` multiprocessors where given (--multiprocessors; 0: none), else the
// recorder's figures (harness/doctor/facts.hpp), where it stored them in either run and `capacity` (0: none
// asked) is at most the memory of the GPU recorded on: more is another GPU, whose wave may be larger. None
// where a recorded figure is beyond any GPU's.
[[nodiscard]] std::optional<GpuShape> gpu_of_runs(const DoctorInput& a, const DoctorInput& b,
                                                  std::uint64_t capacity, std::uint64_t given = 0);

// One allocation of the template, and the lines that name it (its free, its free_completed).
struct Resize {
  std::size_t alloc = 0;  // index into the template's events
  std::vector<std::size_t> lines;
  std::uint64_t size_a = 0;      // at batch A
  double slope = 0;              // bytes per sample (0: it does not depend on the batch)
  double upper_slope = 0;        // the pessimistic model's (Note [The batch that is safe])
  std::uint64_t block = 0;       // Note [A reduction's scratch stops growing]: 65536 g bytes (0: not one)
  std::uint64_t cap = 0;         // its size at one wave of blocks
  double blocks_per_sample = 0;  // in the run below the cap: its pace past the wave is a 16th of this
  // Note [A workspace PyTorch does without]: where its refusal is survived, what the pessimistic model
  // settles for then (none: a refusal is an OOM).
  std::optional<std::uint64_t> fallback;
};

// A is the template's run (the larger batch), B the other.
struct BatchModel {
  bool template_is_second = false;  // A is the second snapshot given
  std::uint64_t batch_a = 0;
  std::uint64_t batch_b = 0;
  replay::ReplayTrace template_trace;  // the first run's events of the one device, less segments and OOMs
  std::vector<Resize> resizes;         // every allocation of the template
  Match match;
  std::size_t requests_a = 0;
  std::size_t requests_b = 0;
  std::uint64_t constant_bytes = 0;   // the sum, over matched requests, of those that did not change
  std::size_t capped = 0;             // reductions' scratch buffers capped (Note [A reduction's scratch ...])
  std::uint64_t multiprocessors = 0;  // the GPU's, as the cap took them (0: unknown, nothing capped)
  std::size_t held = 0;               // matched requests that changed, but not as a tensor of the batch
  // Note [A workspace PyTorch does without]: matched requests that changed and were freed at once in both
  // runs, those of them the recorder marked in both as a convolution's (the workspaces PyTorch does without
  // when refused), and whether it marked convolutions in both runs at all.
  std::size_t freed_at_once = 0;
  std::size_t survivable = 0;
  bool convolutions_marked = false;
  double bytes_per_sample = 0;  // the sum of the matched requests' slopes

  [[nodiscard]] bool well_matched() const {
    const auto matched = static_cast<double>(match.pairs.size());
    return !match.by_position && matched >= kWellMatched * static_cast<double>(requests_a) &&
           matched >= kWellMatched * static_cast<double>(requests_b);
  }
};

// The batch sizes of two runs of one program, the first run's first: both above 0 and different (what a
// model of two runs needs), the one check of predict-batch's and doctor's --batch.
class BatchPair {
 public:
  // Throws InputError naming `what` (the command's flag) unless both are above 0 and different.
  BatchPair(std::uint64_t first, std::uint64_t second, std::string what);
  // "8,16". Throws InputError naming `what` for anything else.
  [[nodiscard]] static BatchPair parse(const std::string& text, std::string what);

  [[nodiscard]] std::uint64_t first() const noexcept { return first_; }
  [[nodiscard]] std::uint64_t second() const noexcept { return second_; }
  [[nodiscard]] const std::string& what() const noexcept { return what_; }

 private:
  std::uint64_t first_;
  std::uint64_t second_;
  std::string what_;
};

// Throws InputError naming the batches' `what` when a run was recorded at another batch than the pair says,
// or has no allocation, and `trace_device_what` (the command's flag that gave `trace_device`) when a run has
// no such device. `gpu`: the GPU's figures (Note [A reduction's scratch stops growing]); none leaves every
// request uncapped.
[[nodiscard]] BatchModel build_batch_model(const DoctorInput& a, const DoctorInput& b,
                                           const BatchPair& batches, const std::string& trace_device,
                                           std::string_view trace_device_what,
                                           const std::optional<GpuShape>& gpu = std::nullopt);

// The template with every allocation (and its frees) resized for batch `n`, by the model or, `pessimistic`,
// by its pessimistic twin.
[[nodiscard]] replay::ReplayTrace trace_at(const BatchModel& model, std::uint64_t n,
                                           bool pessimistic = false);

struct BatchTry {
  std::uint64_t batch = 0;
  bool fits = false;
  std::int64_t peak_reserved = 0;
  std::int64_t peak_allocated = 0;
  std::optional<replay::OomPoint> oom;  // where it ran out
  std::uint64_t largest_request = 0;    // the trace's largest allocation at this batch
  std::uint64_t refusals_survived = 0;  // workspaces refused (Note [A workspace PyTorch does without])
};

struct BatchAnswer {
  std::uint64_t capacity = 0;
  replay::SweepSetting setting;
  std::optional<BatchTry> largest_fit;  // none: not even batch 1 fits
  std::optional<BatchTry> first_fail;   // the lowest batch above the answer seen to run out; none: none did
  std::vector<BatchTry> tries;          // in the order they were replayed
  std::optional<BatchTry> safe_fit;     // the pessimistic model's largest fit: the batch named
  std::vector<BatchTry> safe_tries;
};

struct BatchSearch {
  std::optional<BatchTry> largest_fit;  // the answer; none: not even batch 1 fits
  std::optional<BatchTry> first_fail;   // the lowest batch above it seen to run out; none: none did
  std::vector<BatchTry> tries;          // in the order they were replayed
};

// predict-batch's search over any replay of a batch: doubling from `start`, then bisecting between the last
// fit and the first failure, then, with `scan`, the batches below the answer one by one (Note [Fitting is not
// monotonic]); no batch above `ceiling`, and no batch replayed twice.
[[nodiscard]] BatchSearch search_batches(const std::function<BatchTry(std::uint64_t)>& replay_batch,
                                         std::uint64_t start, std::uint64_t ceiling, std::uint64_t capacity,
                                         bool scan);

// Whether batch `n` runs with no OOM under the setting on a device of the capacity, by the model or its
// pessimistic twin.
[[nodiscard]] bool batch_fits(const BatchModel& model, std::uint64_t n, const replay::SweepSetting& setting,
                              std::uint64_t capacity, bool pessimistic);

[[nodiscard]] BatchAnswer search_batch(const BatchModel& model, const replay::SweepSetting& setting,
                                       std::uint64_t capacity, std::uint64_t max_batch);

}  // namespace memstress::doctor
