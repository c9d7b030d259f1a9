#include "harness/replay/replayer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "harness/alloc/caching/caching_allocator.hpp"
#include "harness/core/error.hpp"
#include "harness/memory/sim_backend.hpp"
#include "harness/replay/replay_device.hpp"

namespace memstress::replay {
namespace {

// Synthetic streams that hold pending frees open (Note [Pending frees]); far above any cudaStream_t.
constexpr std::uint64_t kPendingStreamBase = 0xffff000000000000ULL;

std::int64_t stat(const MemoryStats& stats, std::string_view key) {
  const auto it = stats.find(key);
  return it == stats.end() ? 0 : it->second;
}

// What an OOM point records of the allocator's state.
struct Moment {
  std::int64_t reserved = 0;
  std::int64_t allocated = 0;
  std::optional<std::int64_t> largest_free_block;
};

Moment moment_of(const MemoryStats& stats) {
  Moment m{stat(stats, "reserved_bytes.all.current"), stat(stats, "allocated_bytes.all.current"),
           std::nullopt};
  if (const auto it = stats.find("largest_free_block_bytes"); it != stats.end()) {
    m.largest_free_block = it->second;
  }
  return m;
}

// For each free of `device`: whether another allocation of the device comes before its free_completed
// (or it never completes), i.e. whether the block must stay unusable after the free. A trace without any
// free_completed line (v1: --alloc-trace, RMM logs) frees at once.
std::vector<bool> late_completions(const ReplayTrace& trace, std::uint32_t device) {
  std::vector<bool> late(trace.events.size(), false);
  struct Open {
    std::size_t index;
    std::uint64_t allocs;
  };
  std::unordered_map<std::uint64_t, Open> open;
  std::uint64_t allocs = 0;
  bool completions = false;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const Event& e = trace.events[i];
    if (e.device != device) {
      continue;
    }
    if (e.action == Action::alloc) {
      ++allocs;
    } else if (e.action == Action::free) {
      open[e.id] = Open{i, allocs};
    } else if (e.action == Action::free_completed) {
      completions = true;
      if (const auto it = open.find(e.id); it != open.end()) {
        late[it->second.index] = it->second.allocs != allocs;
        open.erase(it);
      }
    }
  }
  for (const auto& [id, o] : open) {
    late[o.index] = completions;  // still pending when the trace ends
  }
  return late;
}

class Replayer {
 public:
  Replayer(const ReplayTrace& trace, Allocator& allocator, const ReplayOptions& options)
      : trace_(trace),
        allocator_(allocator),
        options_(options),
        device_(allocator.backend()),
        sim_(dynamic_cast<SimBackend*>(&allocator.backend())) {
    result_.pending_frees = sim_ != nullptr && dynamic_cast<caching::CachingAllocator*>(&allocator) != nullptr
                                ? PendingFrees::record_stream
                                : PendingFrees::deferred;
  }

  ReplayResult run() {
    const std::uint32_t device =
        trace_.devices.empty() ? 0 : device_index(trace_, options_.device, options_.device_what);
    result_.trace_device = trace_.devices.empty() ? std::string() : trace_.devices[device];
    for (std::size_t i = 0; i < trace_.devices.size(); ++i) {
      if (i != device) {
        result_.other_devices.push_back(trace_.devices[i]);
      }
    }
    result_.allocator = std::string(allocator_.name());
    result_.device_label = allocator_.backend().info().label();
    result_.capacity = allocator_.backend().info().capacity;
    const std::vector<bool> late = late_completions(trace_, device);
    fatal_oom_ = fatal_oom(trace_, device);
    const auto device_events = static_cast<std::uint64_t>(std::count_if(
        trace_.events.begin(), trace_.events.end(), [&](const Event& e) { return e.device == device; }));
    const std::uint64_t points = std::max<std::uint64_t>(options_.timeline_points, 1);
    const std::uint64_t stride = std::max<std::uint64_t>((device_events + points - 1) / points, 1);
    allocator_.reset_peak_stats();
    std::uint64_t in_stretch = 0;
    for (std::size_t i = 0; i < trace_.events.size(); ++i) {
      const Event& e = trace_.events[i];
      if (e.device != device) {
        ++result_.counts.other_device_events;
        continue;
      }
      ++result_.counts.events;
      step(i, e, late[i]);
      if (options_.capture_at_event == i) {
        result_.captured = allocator_.memory_stats();
      }
      if (++in_stretch == stride) {
        sample(i, e.time_ns);
        in_stretch = 0;
      }
      if ((options_.stop_at_first_oom && (replay_ooms_ > 0 || failed_probes_ > 0)) ||
          options_.stop_after_event == i) {
        result_.stopped_early = i + 1 < trace_.events.size();
        if (in_stretch != 0) {
          sample(i, e.time_ns);
          in_stretch = 0;
        }
        break;
      }
    }
    if (in_stretch != 0 && !result_.stopped_early) {
      const Event& last = trace_.events.back();
      sample(trace_.events.size() - 1, last.time_ns);
    }
    device_.synchronize();
    finish();
    return std::move(result_);
  }

 private:
  struct Live {
    void* ptr = nullptr;
    StreamRef stream;
    bool freed = false;  // deferred: freed by the program, awaiting free_completed
  };

  void step(std::size_t index, const Event& e, bool late) {
    switch (e.action) {
      case Action::alloc:
        return alloc(index, e);
      case Action::free:
        return free(e, late);
      case Action::free_completed:
        return complete(e);
      case Action::oom:
        ++result_.counts.trace_ooms;
        return recorded_oom(index, e);
      case Action::segment_alloc:
      case Action::segment_map:
        return segment(static_cast<std::int64_t>(e.bytes));
      case Action::segment_free:
      case Action::segment_unmap:
        return segment(-static_cast<std::int64_t>(e.bytes));
    }
  }

  void alloc(std::size_t index, const Event& e) {
    ++result_.counts.allocs;
    if (live_.contains(e.id)) {
      throw InputError(
          fmt::format("{}: seq {}: alloc of id {}, which is already live", trace_.name, e.seq, e.id));
    }
    failed_.erase(e.id);
    const StreamRef stream = device_.stream(e.stream);
    const auto settles = options_.survivable.find(index);
    const bool survivable = settles != options_.survivable.end();
    // A refusal's explanation is asked for only where it is kept: most refusals of a replay at capacity are
    // only counted, and the explanation cost more than the rest of a refusal.
    std::string refusal;
    if (place(e, stream, survivable ? nullptr : explanation(refusal))) {
      return;
    }
    if (!survivable) {
      failed_.insert(e.id);
      record_oom(index, e, refusal);
      return;
    }
    if (settles->second == 0) {
      ++result_.counts.refusals_survived;
      failed_.insert(e.id);  // it does without: its free is skipped
      return;
    }
    // The allocator has given back its cache: the smaller request, asked again.
    Event asked = e;
    asked.bytes = std::min(settles->second, e.bytes);
    if (place(asked, stream, explanation(refusal))) {
      ++result_.counts.refusals_survived;
    } else {
      failed_.insert(e.id);
      record_oom(index, asked, refusal);
    }
  }

  // Allocates the event's bytes on `stream` and keeps the block live under its id; false when the
  // allocator refuses (its explanation in `refusal`, when given).
  bool place(const Event& e, const StreamRef& stream, std::string* refusal) {
    const std::optional<void*> ptr = allocator_.try_allocate(e.bytes, stream, refusal);
    if (!ptr) {
      return false;
    }
    device_.touch(*ptr, e.bytes, stream);
    live_.emplace(e.id, Live{*ptr, stream, false});
    return true;
  }

  // Where a refusal's explanation goes: `to`, while record_oom keeps OOM points in detail.
  std::string* explanation(std::string& to) const {
    return result_.ooms.size() < options_.oom_points ? &to : nullptr;
  }

  void free(const Event& e, bool late) {
    const auto it = live_.find(e.id);
    if (it == live_.end() || it->second.freed) {
      if (failed_.contains(e.id)) {
        ++result_.counts.frees_of_failed;
      } else {
        ++result_.counts.unknown_frees;
      }
      return;
    }
    ++result_.counts.frees;
    Live& block = it->second;
    if (!late || block.ptr == nullptr) {
      allocator_.deallocate(block.ptr);
      live_.erase(it);
      return;
    }
    ++result_.counts.frees_pending;
    if (result_.pending_frees == PendingFrees::deferred) {
      block.freed = true;
      return;
    }
    const StreamRef hold{static_cast<std::uintptr_t>(kPendingStreamBase + next_pending_++)};
    sim_->hold_stream(hold);
    allocator_.record_stream(block.ptr, hold);
    allocator_.deallocate(block.ptr);
    pending_.emplace(e.id, hold);
    live_.erase(it);
  }

  void complete(const Event& e) {
    if (const auto p = pending_.find(e.id); p != pending_.end()) {
      sim_->release_stream(p->second);
      pending_.erase(p);
      return;
    }
    if (const auto it = live_.find(e.id); it != live_.end() && it->second.freed) {
      allocator_.deallocate(it->second.ptr);
      live_.erase(it);
    }
    // Otherwise the free already returned the block (or it was unknown or failed: counted at the free).
  }

  void segment(std::int64_t delta) {
    ++result_.counts.segment_events;
    trace_reserved_ += delta;
    result_.trace_peak_reserved = std::max(result_.trace_peak_reserved.value_or(0), trace_reserved_);
  }

  // The recorded program's OOM: the state now and, when asked, whether this allocator grants the request.
  void recorded_oom(std::size_t index, const Event& e) {
    const MemoryStats stats = allocator_.memory_stats();
    RecordedOom r;
    r.event_index = index;
    r.seq = e.seq;
    r.time_ns = e.time_ns;
    r.request_bytes = e.bytes;
    r.stream = e.stream;
    if (result_.counts.segment_events > 0) {
      r.recorded_reserved = trace_reserved_;
    }
    const Moment m = moment_of(stats);
    r.reserved = m.reserved;
    r.allocated = m.allocated;
    r.largest_free_block = m.largest_free_block;
    r.earlier_replay_oom = replay_ooms_ > 0;
    r.survived = !fatal_oom_ || index < *fatal_oom_;
    if (options_.probe_recorded_ooms && !r.survived) {
      try {
        void* ptr = allocator_.allocate(e.bytes, device_.stream(e.stream));
        r.probe_reserved = moment_of(allocator_.memory_stats()).reserved;
        allocator_.deallocate(ptr);
        r.probe_granted = true;
      } catch (const OutOfMemoryError&) {
        r.probe_granted = false;
        ++failed_probes_;  // the allocator counted it in num_ooms: not an OOM of the trace's allocations
      }
    } else if (options_.release_at_recorded_ooms) {
      allocator_.empty_cache();  // Note [A recorded OOM gives back the cache]
    }
    result_.recorded_ooms.push_back(r);
  }

  void record_oom(std::size_t index, const Event& e, const std::string& message) {
    ++replay_ooms_;
    if (result_.ooms.size() >= options_.oom_points) {
      return;
    }
    const MemoryStats stats = allocator_.memory_stats();
    OomPoint p;
    p.event_index = index;
    p.seq = e.seq;
    p.time_ns = e.time_ns;
    p.request_bytes = e.bytes;
    p.stream = e.stream;
    const Moment m = moment_of(stats);
    p.largest_free_block = m.largest_free_block;
    p.reserved = m.reserved;
    p.allocated = m.allocated;
    p.message = message;
    result_.ooms.push_back(std::move(p));
  }

  // Closes a stretch of events: its peaks become a timeline point and feed the replay's peaks.
  void sample(std::size_t index, std::uint64_t time_ns) {
    const MemoryStats stats = allocator_.memory_stats();
    TimelinePoint p;
    p.event_index = index;
    p.time_ns = time_ns;
    p.allocated = stat(stats, "allocated_bytes.all.peak");
    p.reserved = stat(stats, "reserved_bytes.all.peak");
    result_.peak_allocated = std::max(result_.peak_allocated, p.allocated);
    result_.peak_reserved = std::max(result_.peak_reserved, p.reserved);
    result_.peak_active = std::max(result_.peak_active, stat(stats, "active_bytes.all.peak"));
    result_.peak_requested = std::max(result_.peak_requested, stat(stats, "requested_bytes.all.peak"));
    result_.timeline.push_back(p);
    allocator_.reset_peak_stats();
  }

  void finish() {
    result_.counts.live_at_end = live_.size() + pending_.size();
    result_.final_stats = allocator_.memory_stats();
    result_.num_alloc_retries = stat(result_.final_stats, "num_alloc_retries");
    result_.num_ooms = stat(result_.final_stats, "num_ooms") - failed_probes_;
    MemoryStats with_peaks = result_.final_stats;
    with_peaks["allocated_bytes.all.peak"] = result_.peak_allocated;
    with_peaks["reserved_bytes.all.peak"] = result_.peak_reserved;
    result_.fragmentation = fragmentation(with_peaks);
    // Give back what the trace never freed, so the allocator ends empty (its figures are taken).
    for (const auto& [id, s] : pending_) {
      sim_->release_stream(s);
    }
    pending_.clear();
    for (const auto& [id, block] : live_) {
      allocator_.deallocate(block.ptr);
    }
    live_.clear();
    allocator_.empty_cache();
  }

  const ReplayTrace& trace_;
  Allocator& allocator_;
  const ReplayOptions& options_;
  ReplayDevice device_;
  SimBackend* sim_;
  ReplayResult result_;
  std::unordered_map<std::uint64_t, Live> live_;
  std::unordered_map<std::uint64_t, StreamRef> pending_;
  std::unordered_set<std::uint64_t> failed_;
  // The oom line the program died of (fatal_oom); earlier ones survived.
  std::optional<std::size_t> fatal_oom_;
  std::uint64_t next_pending_ = 0;
  std::int64_t trace_reserved_ = 0;
  std::uint64_t replay_ooms_ = 0;   // allocations of the trace that failed in this replay
  std::int64_t failed_probes_ = 0;  // probe_recorded_ooms requests that were refused
};

}  // namespace

std::string_view to_string(PendingFrees mode) noexcept {
  return mode == PendingFrees::record_stream ? "record_stream" : "deferred";
}

ReplayResult replay_trace(const ReplayTrace& trace, Allocator& allocator, const ReplayOptions& options) {
  return Replayer(trace, allocator, options).run();
}

}  // namespace memstress::replay
