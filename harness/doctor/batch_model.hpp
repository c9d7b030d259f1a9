#pragma once

// `memstress predict-batch`: the program at any batch size, from two recordings at two sizes.
//
// Note [A request as a function of the batch]. Each request matched between the run at batch A and the
// run at batch B (harness/doctor/batch_match.hpp) is taken to grow linearly with the batch: its size at
// batch N is s_A + (s_B - s_A) (N - A) / (B - A). That is exact for what is proportional to the batch
// (activations, gradients of activations, attention scores per sample) and for what does not depend on
// it (weights, their gradients and the optimizer's state: s_A = s_B), and it is what makes the model
// honest about everything else: a request that grows faster than linearly (a workspace chosen per
// shape) is mispredicted, and the two runs cannot tell. The first run's trace is the template: its
// events in order, each allocation resized (requests it alone made keep their size; the second run's
// own requests are left out), its recorded allocator's segment lines and OOMs dropped, since a replay
// makes its own. The largest batch that fits is then searched by replay: doubling until it does not
// fit, then bisecting; a batch fits when its replay under the setting on a device of the capacity ends
// with no OOM.

#include <cstdint>
#include <optional>
#include <string>

#include "harness/doctor/batch_match.hpp"
#include "harness/doctor/settings.hpp"

namespace memstress::doctor {

// One allocation of the template, and the lines that name it (its free, its free_completed).
struct Resize {
  std::size_t alloc = 0;  // index into the template's events
  std::vector<std::size_t> lines;
  std::uint64_t size_a = 0;  // at batch A
  double slope = 0;          // bytes per sample (0: it does not depend on the batch)
};

struct BatchModel {
  std::uint64_t batch_a = 0;
  std::uint64_t batch_b = 0;
  replay::ReplayTrace template_trace;  // the first run's events of the one device, less segments and OOMs
  std::vector<Resize> resizes;         // every allocation of the template
  Match match;
  std::size_t requests_a = 0;
  std::size_t requests_b = 0;
  std::uint64_t constant_bytes = 0;  // the sum, over matched requests, of those that did not change
  double bytes_per_sample = 0;       // the sum of the matched requests' slopes
};

// Throws InputError when the batches are equal or not positive, or a run has no allocation.
[[nodiscard]] BatchModel build_batch_model(const DoctorInput& a, const DoctorInput& b, std::uint64_t batch_a,
                                           std::uint64_t batch_b, const std::string& trace_device);

// The template with every allocation (and its frees) resized for batch `n`.
[[nodiscard]] replay::ReplayTrace trace_at(const BatchModel& model, std::uint64_t n);

struct BatchTry {
  std::uint64_t batch = 0;
  bool fits = false;
  std::int64_t peak_reserved = 0;
  std::int64_t peak_allocated = 0;
  std::optional<replay::OomPoint> oom;  // where it ran out
};

struct BatchAnswer {
  std::uint64_t capacity = 0;
  replay::SweepSetting setting;
  std::optional<BatchTry> largest_fit;  // none: not even batch 1 fits
  std::optional<BatchTry> first_fail;   // none: it fits up to max_batch
  std::vector<BatchTry> tries;          // in the order they were replayed
};

[[nodiscard]] BatchAnswer search_batch(const BatchModel& model, const replay::SweepSetting& setting,
                                       std::uint64_t capacity, std::uint64_t max_batch);

}  // namespace memstress::doctor
