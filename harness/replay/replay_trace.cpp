#include "harness/replay/replay_trace.hpp"

#include <fmt/format.h>

#include <array>
#include <optional>

#include "harness/core/error.hpp"
#include "harness/trace/trace_event.hpp"
#include "harness/trace/trace_fields.hpp"
#include "harness/trace/trace_lines.hpp"
#include "harness/trace/trace_reader.hpp"

namespace memstress::replay {
namespace {

constexpr std::array<Action, 8> kActions{Action::alloc,       Action::free,          Action::free_completed,
                                         Action::oom,         Action::segment_alloc, Action::segment_free,
                                         Action::segment_map, Action::segment_unmap};

std::optional<Action> action_from(std::string_view name) noexcept {
  for (const Action a : kActions) {
    if (name == to_string(a)) {
      return a;
    }
  }
  return std::nullopt;
}

// Whether the action names an id (alloc, free, free_completed: a block; segment_alloc/free: a segment).
bool needs_id(Action a) noexcept {
  return a != Action::oom && a != Action::segment_map && a != Action::segment_unmap;
}

class Parser {
 public:
  explicit Parser(std::string_view name) { trace_.name = std::string(name); }

  ReplayTrace parse(TraceLines& text) {
    std::string_view line;
    if (!next_line(text, line)) {
      fail("empty file: not a memstress trace (the first line must be '{}')", kTraceMagic);
    }
    if (line != kTraceMagic) {
      fail("not a memstress trace: the first line must be '{}'", kTraceMagic);
    }
    if (!next_line(text, line) || !line.starts_with(kTraceColumns)) {
      fail("bad column header (expected '{}')", kTraceColumns);
    }
    columns_ = split_trace_fields(line).size();
    while (next_line(text, line)) {
      if (!line.empty() && line.front() != '#') {
        parse_event(line);
      }
    }
    return std::move(trace_);
  }

 private:
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    throw InputError(fmt::format("{}:{}: {}", trace_.name, line_number_,
                                 fmt::format(format, std::forward<Args>(args)...)));
  }

  bool next_line(TraceLines& text, std::string_view& line) {
    bool terminated = true;
    if (!text.next(line, terminated)) {
      return false;
    }
    ++line_number_;
    if (!terminated) {
      fail("the line has no newline at its end: the trace was cut short");
    }
    return true;
  }

  [[nodiscard]] std::uint64_t number(std::string_view field, std::string_view column) const {
    const std::optional<std::uint64_t> value = parse_trace_number(field);
    if (!value) {
      fail("column '{}': '{}' is not a non-negative integer", column, field);
    }
    return *value;
  }

  void parse_event(std::string_view line) {
    const std::vector<std::string_view> f = split_trace_fields(line);
    if (f.size() != columns_) {
      fail("{} fields where the header has {} columns", f.size(), columns_);
    }
    Event e;
    e.seq = number(f[0], "seq");
    if (any_ && e.seq <= last_seq_) {
      fail("seq {} does not follow seq {}", e.seq, last_seq_);
    }
    any_ = true;
    last_seq_ = e.seq;
    e.time_ns = number(f[1], "time_ns");
    if (!is_trace_action_name(f[2])) {
      fail("bad action '{}'", f[2]);
    }
    const std::optional<Action> action = action_from(f[2]);
    if (!action) {
      ++trace_.skipped_actions[std::string(f[2])];
      return;
    }
    e.action = *action;
    if (needs_id(e.action)) {
      e.id = number(f[3], "id");
    } else if (e.action == Action::oom && !f[3].empty()) {
      fail("an oom line has no id (found '{}')", f[3]);
    }
    e.bytes = number(f[4], "bytes");
    if (e.bytes > kMaxTraceBytes && e.action != Action::oom) {  // a request refused may ask anything
      fail("column 'bytes': {} is more memory than any device has (at most {} bytes, 256 TiB)", e.bytes,
           kMaxTraceBytes);
    }
    // What the trace asks for in all bounds what can be live at once: kept under 2^63, no sum of live bytes
    // (signed or not) can wrap.
    asked_ += e.action == Action::oom ? 0 : e.bytes;
    if (asked_ > kMaxAsked) {
      fail("the events so far ask for {} bytes in all, more than a sum of memory may hold", asked_);
    }
    e.stream = number(f[5], "stream");
    if (f[6].empty()) {
      fail("column 'device' is empty");
    }
    if (has_control_character(f[6])) {
      fail("column 'device': '{}' holds a control character", f[6]);
    }
    e.device = device_index(f[6]);
    trace_.events.push_back(e);
  }

  std::uint32_t device_index(std::string_view label) {
    for (std::size_t i = 0; i < trace_.devices.size(); ++i) {
      if (trace_.devices[i] == label) {
        return static_cast<std::uint32_t>(i);
      }
    }
    trace_.devices.emplace_back(label);
    return static_cast<std::uint32_t>(trace_.devices.size() - 1);
  }

  ReplayTrace trace_;
  std::uint64_t line_number_ = 0;
  std::size_t columns_ = 7;
  bool any_ = false;
  std::uint64_t last_seq_ = 0;
  static constexpr std::uint64_t kMaxAsked = 1ULL << 62U;
  std::uint64_t asked_ = 0;
};

}  // namespace

std::string_view to_string(Action action) noexcept {
  switch (action) {
    case Action::alloc:
      return "alloc";
    case Action::free:
      return "free";
    case Action::free_completed:
      return "free_completed";
    case Action::oom:
      return "oom";
    case Action::segment_alloc:
      return "segment_alloc";
    case Action::segment_free:
      return "segment_free";
    case Action::segment_map:
      return "segment_map";
    case Action::segment_unmap:
      return "segment_unmap";
  }
  return "?";
}

ReplayTrace parse_replay_trace(std::string_view text, std::string_view name) {
  TraceLines lines(text, std::string(name));
  return Parser(name).parse(lines);
}

std::uint32_t device_index(const ReplayTrace& trace, const std::string& wanted, std::string_view what) {
  if (trace.devices.empty()) {
    throw InputError(fmt::format("{}: no allocation events", trace.name));
  }
  for (std::size_t i = 0; i < trace.devices.size(); ++i) {
    if (wanted.empty() || trace.devices[i] == wanted) {
      return static_cast<std::uint32_t>(i);
    }
  }
  throw InputError(fmt::format("{} '{}': the trace '{}' has no such device (it has: {})", what, wanted,
                               trace.name, fmt::join(trace.devices, ", ")));
}

std::optional<std::size_t> fatal_oom(const ReplayTrace& trace, std::uint32_t device) {
  std::optional<std::size_t> fatal;
  for (std::size_t i = trace.events.size(); i-- > 0;) {
    const Event& e = trace.events[i];
    if (e.device == device && e.action == Action::alloc) {
      break;
    }
    if (e.device == device && e.action == Action::oom) {
      fatal = i;
    }
  }
  return fatal;
}

std::string format_replay_trace(const ReplayTrace& trace, std::string_view comment) {
  std::string out = fmt::format("{}\n{}\n# {}\n", kTraceMagic, kTraceColumns, comment);
  for (const Event& e : trace.events) {
    const bool id = needs_id(e.action);
    out += fmt::format("{},{},{},{},{},{},{}\n", e.seq, e.time_ns, to_string(e.action),
                       id ? std::to_string(e.id) : "", e.bytes, e.stream, trace.devices[e.device]);
  }
  return out;
}

ReplayTrace read_replay_trace(const std::filesystem::path& path) {
  return read_replay_trace(path, path.string());
}

ReplayTrace read_replay_trace(const std::filesystem::path& path, const std::string& name) {
  TraceLines lines(path, "trace");  // read as decompressed, never whole
  return Parser(name).parse(lines);
}

}  // namespace memstress::replay
