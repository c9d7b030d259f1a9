#include "harness/doctor/batch_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "harness/core/error.hpp"

namespace memstress::doctor {
namespace {

bool kept(replay::Action a) {
  return a == replay::Action::alloc || a == replay::Action::free || a == replay::Action::free_completed;
}

constexpr std::uint64_t kScratchPerGroup = 65536;  // bytes of scratch per block, per group of 128 outputs
constexpr std::uint64_t kOutputPerGroup = 512;     // the most bytes of output a group of 128 outputs may have
constexpr std::uint64_t kThreadsPerReduceBlock = 128;
constexpr std::uint64_t kRegrowth = 16;  // past the wave, the scratch grows at 1/16 of its pace
constexpr std::uint64_t kMostMultiprocessors = 65536;
constexpr std::uint64_t kMostThreads = 4096;

// The kept event of `device` next to `from` (before it where `step` is -1), if any.
const replay::Event* neighbour(const std::vector<replay::Event>& events, std::size_t from,
                               std::ptrdiff_t step) {
  const std::uint32_t device = events[from].device;
  for (auto k = static_cast<std::ptrdiff_t>(from) + step;
       k >= 0 && k < static_cast<std::ptrdiff_t>(events.size()); k += step) {
    const replay::Event& e = events[static_cast<std::size_t>(k)];
    if (e.device == device && kept(e.action)) {
      return &e;
    }
  }
  return nullptr;
}

// Note [A reduction's scratch stops growing]: g, where the allocation at `alloc` is the scratch of a sum over
// rows: right after it, on its device, 4 g bytes of semaphores alone, freed before it with nothing else in
// between; right before it, the sum's output, at most 512 g bytes (so that the partial sums' bytes a block,
// the accumulator's size x 128 an output, are at most 65536 g: a sum or mean of any type; not a variance or
// an argmax, whose accumulators are larger than their outputs).
std::optional<std::uint64_t> reduction_groups(const std::vector<replay::Event>& events, std::size_t alloc) {
  const replay::Event& scratch = events[alloc];
  const replay::Event* semaphores = neighbour(events, alloc, 1);
  if (semaphores == nullptr || semaphores->action != replay::Action::alloc || semaphores->bytes == 0 ||
      semaphores->bytes % 4 != 0 || semaphores->bytes / 4 > kScratchPerGroup) {
    return std::nullopt;
  }
  const std::uint64_t groups = semaphores->bytes / 4;
  const replay::Event* output = alloc == 0 ? nullptr : neighbour(events, alloc, -1);
  if (output == nullptr || output->action != replay::Action::alloc || output->bytes == 0 ||
      output->bytes > kOutputPerGroup * groups) {
    return std::nullopt;
  }
  bool semaphores_freed = false;
  for (std::size_t k = alloc + 1; k < events.size(); ++k) {
    const replay::Event& e = events[k];
    if (e.device != scratch.device || !kept(e.action) || &e == semaphores) {
      continue;
    }
    if (e.id == semaphores->id && e.action != replay::Action::alloc) {
      semaphores_freed = true;
    } else if (e.id == scratch.id && e.action == replay::Action::free && semaphores_freed) {
      return groups;
    } else {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// Note [A workspace PyTorch does without]: whether the allocation at `alloc` is freed by the next kept line
// of its device.
bool freed_at_once(const std::vector<replay::Event>& events, std::size_t alloc) {
  const replay::Event* next = neighbour(events, alloc, 1);
  return next != nullptr && next->id == events[alloc].id && next->action != replay::Action::alloc;
}

bool marked_convolution(const DoctorInput& input, std::size_t alloc) {
  return input.facts.marked(input.trace.events[alloc].id, kConvolutionMark);
}

// Whether the recorder marked what convolutions allocate in this run (it says so; a convolution's mark tells
// too).
bool convolutions_marked(const DoctorInput& input) {
  const std::vector<std::string>& marks = input.facts.marks;
  if (std::find(marks.begin(), marks.end(), kConvolutionMark) != marks.end()) {
    return true;
  }
  const nlohmann::json& r = input.facts.recorder;
  const auto it = r.is_object() ? r.find("convolutions_marked") : r.end();
  return r.is_object() && it != r.end() && it->is_boolean() && it->get<bool>();
}

// The scratch's block and cap where request i of `a` and j of `b` are one reduction's scratch in both runs
// (Note [A reduction's scratch stops growing]), and its blocks per sample in the run below the cap.
struct Scratch {
  std::uint64_t block = 0;
  std::uint64_t cap = 0;
  double blocks_per_sample = 0;
};

std::optional<Scratch> reduction_scratch(const DoctorInput& a, const Request& ra, std::uint64_t batch_a,
                                         const DoctorInput& b, const Request& rb, std::uint64_t batch_b,
                                         const GpuShape& gpu) {
  if (ra.bytes == rb.bytes) {
    return std::nullopt;  // not grown: nothing to cap
  }
  const std::optional<std::uint64_t> groups = reduction_groups(a.trace.events, ra.event_index);
  if (!groups || reduction_groups(b.trace.events, rb.event_index) != groups) {
    return std::nullopt;
  }
  const std::uint64_t block = kScratchPerGroup * *groups;
  const std::uint64_t wave = gpu.multiprocessors * gpu.threads_per_multiprocessor / kThreadsPerReduceBlock;
  const std::uint64_t cap = block * ((wave + *groups - 1) / *groups);
  if (ra.bytes % block != 0 || rb.bytes % block != 0 || std::max(ra.bytes, rb.bytes) > cap) {
    return std::nullopt;
  }
  // The run with fewer blocks is below the cap: its blocks per sample bound the rows' (one at the cap would
  // give the model too low a pace past the wave).
  const bool b_smaller = rb.bytes < ra.bytes;
  const std::uint64_t blocks = (b_smaller ? rb.bytes : ra.bytes) / block;  // whole: a multiple, checked above
  return Scratch{block, cap,
                 static_cast<double>(blocks) / static_cast<double>(b_smaller ? batch_b : batch_a)};
}

}  // namespace

std::optional<GpuShape> gpu_of_runs(const DoctorInput& a, const DoctorInput& b, std::uint64_t capacity,
                                    std::uint64_t given) {
  if (given != 0) {
    return GpuShape{given};
  }
  for (const DoctorInput* input : {&a, &b}) {
    const auto sms = input->facts.recorded_number("multiprocessors");
    const auto threads = input->facts.recorded_number("threads_per_multiprocessor");
    const auto total = input->facts.recorded_number("device_total");
    if (!sms || *sms > kMostMultiprocessors || (threads && *threads > kMostThreads) ||
        (capacity != 0 && (!total || capacity > *total))) {
      continue;  // none, not a GPU's, or another GPU than the one recorded on
    }
    return GpuShape{*sms, threads.value_or(GpuShape{}.threads_per_multiprocessor)};
  }
  return std::nullopt;
}

BatchPair::BatchPair(std::uint64_t first, std::uint64_t second, std::string what)
    : first_(first), second_(second), what_(std::move(what)) {
  if (first_ == 0 || second_ == 0 || first_ == second_) {
    throw InputError(
        fmt::format("{} {},{}: two different batch sizes above 0, one per run", what_, first_, second_));
  }
}

BatchPair BatchPair::parse(const std::string& text, std::string what) {
  std::vector<std::uint64_t> values;
  for (std::size_t begin = 0; begin <= text.size();) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    const std::string_view item(text.data() + begin, comma - begin);
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc{} || end != item.data() + item.size()) {
      throw InputError(fmt::format("{} '{}': '{}' is not a batch size", what, text, item));
    }
    values.push_back(v);
    begin = comma + 1;
  }
  if (values.size() != 2) {
    throw InputError(
        fmt::format("{} '{}': give the two batch sizes, the first snapshot's first (e.g. 8,16)", what, text));
  }
  return {values[0], values[1], std::move(what)};
}

BatchModel build_batch_model(const DoctorInput& first, const DoctorInput& second, const BatchPair& batches,
                             const std::string& trace_device, std::string_view trace_device_what,
                             const std::optional<GpuShape>& gpu) {
  const std::uint64_t batch_first = batches.first();
  const std::uint64_t batch_second = batches.second();
  // The recorder notes the batch it was told (memstress_torch.record(batch=...)): a --batch that says
  // otherwise has the files in the other order, or names the wrong runs.
  for (const auto& [input, given] : {std::pair{&first, batch_first}, std::pair{&second, batch_second}}) {
    const std::optional<std::uint64_t> noted = input->facts.recorded_number("batch");
    if (noted && *noted != given) {
      throw InputError(fmt::format(
          "{} {},{}: {} was recorded at batch {} (the recorder's note), not {}; give the batch sizes in "
          "the order of the snapshots",
          batches.what(), batch_first, batch_second, input->trace.name, *noted, given));
    }
  }
  const bool swapped = batch_second > batch_first;  // the larger batch's run is the template
  const DoctorInput& a = swapped ? second : first;
  const DoctorInput& b = swapped ? first : second;
  const std::uint64_t batch_a = swapped ? batch_second : batch_first;
  const std::uint64_t batch_b = swapped ? batch_first : batch_second;
  const std::uint32_t device_a = replay::device_index(a.trace, trace_device, trace_device_what);
  const std::uint32_t device_b = replay::device_index(b.trace, trace_device, trace_device_what);
  SiteIds sites;
  const std::vector<Request> ra = requests_of(a, device_a, sites);
  const std::vector<Request> rb = requests_of(b, device_b, sites);
  for (const auto& [input, requests] : {std::pair{&a, &ra}, std::pair{&b, &rb}}) {
    if (requests->empty()) {
      throw InputError(fmt::format("{}: no allocations to model", input->trace.name));
    }
  }
  BatchModel m;
  m.template_is_second = swapped;
  m.batch_a = batch_a;
  m.batch_b = batch_b;
  m.requests_a = ra.size();
  m.requests_b = rb.size();
  m.multiprocessors = gpu ? gpu->multiprocessors : 0;
  m.convolutions_marked = convolutions_marked(a) && convolutions_marked(b);
  m.match = match_requests(ra, rb, a.facts.frames_recorded && b.facts.frames_recorded,
                           static_cast<double>(batch_b) / static_cast<double>(batch_a));

  // The template: the first run's own events of the device, each allocation with its model.
  m.template_trace.name = a.trace.name;
  m.template_trace.devices = {a.trace.devices[device_a]};
  std::unordered_map<std::uint64_t, std::size_t> resize_of_id;  // live ids of the template
  std::unordered_map<std::uint64_t, std::size_t> request_of_event;
  for (std::size_t i = 0; i < ra.size(); ++i) {
    request_of_event[ra[i].event_index] = i;
  }
  std::vector<double> slope_of_request(ra.size(), 0.0);
  std::vector<double> upper_of_request(ra.size(), 0.0);
  std::vector<std::uint64_t> size_of_request(ra.size());
  std::vector<Scratch> scratch_of_request(ra.size());  // Note [A reduction's scratch stops growing]
  std::vector<std::optional<std::uint64_t>> fallback_of_request(ra.size());  // survivable: its fallback
  for (std::size_t i = 0; i < ra.size(); ++i) {
    size_of_request[i] = ra[i].bytes;
  }
  const double span = static_cast<double>(batch_b) - static_cast<double>(batch_a);
  const double ratio = static_cast<double>(batch_b) / static_cast<double>(batch_a);
  std::sort(m.match.pairs.begin(), m.match.pairs.end());
  for (const auto& [i, j] : m.match.pairs) {
    const auto sa = static_cast<double>(ra[i].bytes);
    const auto sb = static_cast<double>(rb[j].bytes);
    if (ra[i].bytes == rb[j].bytes) {
      m.constant_bytes += ra[i].bytes;
    } else if (sa > 0 && sb / sa >= ratio / kBatchLike && sb / sa <= ratio * kBatchLike) {
      slope_of_request[i] = (sb - sa) / span;  // grows as a tensor of the batch does
      upper_of_request[i] = slope_of_request[i] * (1 + kSlopeMargin);
      m.bytes_per_sample += slope_of_request[i];
    } else {
      size_of_request[i] = std::max(ra[i].bytes, rb[j].bytes);  // a workspace: held, not extrapolated
      upper_of_request[i] = std::max(0.0, (sb - sa) / span);    // unless it grew with the batch
      ++m.held;
    }
    if (ra[i].bytes != rb[j].bytes && freed_at_once(a.trace.events, ra[i].event_index) &&
        freed_at_once(b.trace.events, rb[j].event_index)) {
      ++m.freed_at_once;
      if (marked_convolution(a, ra[i].event_index) && marked_convolution(b, rb[j].event_index)) {
        fallback_of_request[i] = std::min(ra[i].bytes, rb[j].bytes);
        ++m.survivable;
      }
    }
    if (gpu && gpu->multiprocessors != 0) {
      if (const auto scratch = reduction_scratch(a, ra[i], batch_a, b, rb[j], batch_b, *gpu)) {
        scratch_of_request[i] = *scratch;
        ++m.capped;
      }
    }
  }
  for (std::size_t i = 0; i < a.trace.events.size(); ++i) {
    replay::Event e = a.trace.events[i];
    if (e.device != device_a || !kept(e.action)) {
      continue;
    }
    e.device = 0;
    const std::size_t index = m.template_trace.events.size();
    if (e.action == replay::Action::alloc) {
      const std::size_t r = request_of_event.at(i);
      resize_of_id[e.id] = m.resizes.size();
      m.resizes.push_back(Resize{index,
                                 {},
                                 size_of_request[r],
                                 slope_of_request[r],
                                 upper_of_request[r],
                                 scratch_of_request[r].block,
                                 scratch_of_request[r].cap,
                                 scratch_of_request[r].blocks_per_sample,
                                 fallback_of_request[r]});
    } else if (const auto it = resize_of_id.find(e.id); it != resize_of_id.end()) {
      m.resizes[it->second].lines.push_back(index);
    }
    m.template_trace.events.push_back(e);
  }
  return m;
}

replay::ReplayTrace trace_at(const BatchModel& model, std::uint64_t n, bool pessimistic) {
  replay::ReplayTrace t = model.template_trace;
  const double delta = static_cast<double>(n) - static_cast<double>(model.batch_a);
  for (const Resize& r : model.resizes) {
    // At least a byte, and at most 2^62 (a double beyond 2^64 has no integer to be): any device refuses it.
    // Below the template's batch the pessimistic model is the model: it bounds growth, not shrinking.
    const double slope = pessimistic && delta > 0 ? r.upper_slope : r.slope;
    const double size = std::clamp(std::round(static_cast<double>(r.size_a) + slope * delta), 1.0, 0x1p62);
    auto bytes = static_cast<std::uint64_t>(size);
    if (r.cap != 0) {  // Note [A reduction's scratch stops growing]: whole blocks, at most a wave's
      const auto blocks = [&](double exact) {
        return static_cast<std::uint64_t>(std::ceil(exact)) * r.block;
      };
      const std::uint64_t linear = blocks(static_cast<double>(bytes) / static_cast<double>(r.block));
      const std::uint64_t regrown =
          std::max(blocks(static_cast<double>(linear) / static_cast<double>(kRegrowth * r.block)),
                   blocks(r.blocks_per_sample * static_cast<double>(n) / static_cast<double>(kRegrowth)));
      bytes = std::max(std::min(linear, r.cap), regrown);
    }
    t.events[r.alloc].bytes = bytes;
    for (const std::size_t line : r.lines) {
      t.events[line].bytes = bytes;
    }
  }
  return t;
}

namespace {

// Batch `n` replayed by the model or its pessimistic twin, with its peaks and where it ran out.
BatchTry replay_at(const BatchModel& model, std::uint64_t n, bool pessimistic,
                   const replay::SweepSetting& setting, const replay::BackendFactory& device) {
  replay::ReplayOptions options;
  options.timeline_points = 1;
  options.stop_at_first_oom = true;
  for (const Resize& resize : model.resizes) {
    if (resize.fallback) {
      options.survivable.emplace(resize.alloc, pessimistic ? *resize.fallback : 0);
    }
  }
  const replay::ReplayTrace trace = trace_at(model, n, pessimistic);
  const replay::ReplayResult r = replay::replay_setting(trace, setting, device, options).result;
  BatchTry t{n, r.ooms.empty(), r.peak_reserved, r.peak_allocated, std::nullopt};
  t.refusals_survived = r.counts.refusals_survived;
  if (!r.ooms.empty()) {
    t.oom = r.ooms.front();
  }
  for (const Resize& resize : model.resizes) {
    t.largest_request = std::max(t.largest_request, trace.events[resize.alloc].bytes);
  }
  return t;
}

}  // namespace

BatchSearch search_batches(const std::function<BatchTry(std::uint64_t)>& replay_batch, std::uint64_t start,
                           std::uint64_t ceiling, std::uint64_t capacity, bool scan) {
  BatchSearch s;
  const auto tried = [&s](std::uint64_t n) -> const BatchTry* {
    const auto at =
        std::find_if(s.tries.begin(), s.tries.end(), [n](const BatchTry& t) { return t.batch == n; });
    return at == s.tries.end() ? nullptr : &*at;
  };
  const auto attempt = [&](std::uint64_t n) {
    if (const BatchTry* seen = tried(n)) {
      return seen->fits;
    }
    s.tries.push_back(replay_batch(n));
    return s.tries.back().fits;
  };
  std::uint64_t lo = 0;  // the answer: a batch that fits (0: none)
  std::uint64_t hi = 0;  // the smallest batch above it known not to (0: none)
  std::uint64_t n = std::min(start, ceiling);
  while (hi == 0 && lo < ceiling) {
    if (attempt(n)) {
      lo = n;
      n = std::min(2 * n, ceiling);
    } else {
      hi = n;
    }
  }
  const auto bisect = [&] {
    while (hi - lo > 1) {
      const std::uint64_t mid = lo + (hi - lo) / 2;
      (attempt(mid) ? lo : hi) = mid;
    }
  };
  if (hi != 0) {
    bisect();
  }
  // Below the answer, batch by batch, for the first that does not fit, down to batch 1 (islands lie below the
  // batches recorded too), until kScanFits fit in a row, or one fits with its largest request to spare below
  // the capacity, or kScanMost batches were replayed.
  std::uint64_t fits_in_a_row = 0;
  std::uint64_t scanned = 0;
  for (std::uint64_t m = scan ? lo : 0; m > 1 && fits_in_a_row < kScanFits && scanned < kScanMost;
       ++scanned) {
    --m;
    if (!attempt(m)) {
      hi = m;
      fits_in_a_row = 0;
      continue;
    }
    ++fits_in_a_row;
    const BatchTry& fit = *tried(m);
    if (static_cast<std::uint64_t>(fit.peak_reserved) + fit.largest_request <= capacity) {
      break;
    }
  }
  if (hi != 0 && hi < lo) {
    lo = 0;
    for (const BatchTry& t : s.tries) {
      if (t.fits && t.batch < hi) {
        lo = std::max(lo, t.batch);
      }
    }
  }
  for (const BatchTry& t : s.tries) {
    if (t.batch == lo && t.fits) {
      s.largest_fit = t;
    }
    if (t.batch == hi && !t.fits) {
      s.first_fail = t;
    }
  }
  return s;
}

namespace {

// The model's search scans below its answer; the pessimistic one stops at the estimate, already below every
// batch the model was seen to run out at (Note [Fitting is not monotonic]).
BatchSearch search(const BatchModel& model, bool pessimistic, const replay::SweepSetting& setting,
                   std::uint64_t capacity, std::uint64_t start, std::uint64_t ceiling) {
  const replay::BackendFactory device = sim_device(capacity);
  return search_batches([&](std::uint64_t n) { return replay_at(model, n, pessimistic, setting, device); },
                        start, ceiling, capacity, !pessimistic);
}

}  // namespace

bool batch_fits(const BatchModel& model, std::uint64_t n, const replay::SweepSetting& setting,
                std::uint64_t capacity, bool pessimistic) {
  return replay_at(model, n, pessimistic, setting, sim_device(capacity)).fits;
}

BatchAnswer search_batch(const BatchModel& model, const replay::SweepSetting& setting, std::uint64_t capacity,
                         std::uint64_t max_batch) {
  BatchAnswer answer;
  answer.capacity = capacity;
  answer.setting = setting;
  BatchSearch nominal =
      search(model, false, setting, capacity, std::max(model.batch_a, model.batch_b), max_batch);
  answer.largest_fit = nominal.largest_fit;
  answer.first_fail = nominal.first_fail;
  answer.tries = std::move(nominal.tries);
  if (answer.largest_fit && model.well_matched()) {
    // The pessimistic model needs at least as much at every batch: its answer is at most the estimate.
    BatchSearch safe = search(model, true, setting, capacity, std::min(model.batch_a, model.batch_b),
                              answer.largest_fit->batch);
    answer.safe_fit = safe.largest_fit;
    answer.safe_tries = std::move(safe.tries);
    // The batch named must fit by the model too: below the scanned stretch the model was not replayed. Else
    // one lower, where both fit.
    const replay::BackendFactory device = sim_device(capacity);
    for (std::uint64_t steps = 0;
         answer.safe_fit && answer.safe_fit->batch < answer.largest_fit->batch && steps < kScanMost &&
         !replay_at(model, answer.safe_fit->batch, false, setting, device).fits;
         ++steps) {
      const std::uint64_t lower = answer.safe_fit->batch - 1;
      answer.safe_fit = std::nullopt;
      if (lower > 0) {
        BatchTry t = replay_at(model, lower, true, setting, device);
        answer.safe_tries.push_back(t);
        if (t.fits) {
          answer.safe_fit = t;
        }
      }
    }
  }
  return answer;
}

}  // namespace memstress::doctor
