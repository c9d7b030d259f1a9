#include "harness/trace/trace_reader.hpp"

#include <fmt/format.h>

#include <array>
#include <sstream>
#include <unordered_map>

#include "harness/core/error.hpp"
#include "harness/trace/trace_fields.hpp"
#include "harness/trace/trace_file.hpp"

namespace memstress {
namespace {

constexpr std::array<std::string_view, 7> kColumns{"seq",   "time_ns", "action", "id",
                                                   "bytes", "stream",  "device"};

class Parser {
 public:
  explicit Parser(std::string_view name) : name_(name) {}

  Trace parse(std::istream& in) {
    std::string line;
    if (!next_line(in, line)) {
      throw InputError(fmt::format("{}: empty file: not a memstress trace (the first line must be '{}')",
                                   name_, kTraceMagic));
    }
    check_magic(line);
    if (!next_line(in, line)) {
      fail("no column header after the first line (expected '{}')", kTraceColumns);
    }
    check_columns(line);
    while (next_line(in, line)) {
      if (line.empty() || line.front() == '#') {
        continue;
      }
      parse_event(line);
    }
    if (in.bad()) {
      fail("read error");
    }
    return std::move(trace_);
  }

 private:
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    throw InputError(
        fmt::format("{}:{}: {}", name_, line_number_, fmt::format(format, std::forward<Args>(args)...)));
  }

  bool next_line(std::istream& in, std::string& line) {
    if (!std::getline(in, line)) {
      return false;
    }
    ++line_number_;
    if (in.eof() && !line.empty()) {  // getline met the end of the file before a newline
      fail("the line has no newline at its end: the trace was cut short (drop this line to read the rest)");
    }
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    return true;
  }

  void check_magic(std::string_view line) const {
    constexpr std::string_view kPrefix = "# memstress-trace ";
    if (line == kTraceMagic) {
      return;
    }
    if (line.starts_with(kPrefix)) {
      fail("unsupported trace version '{}' (this memstress reads v1)", line.substr(kPrefix.size()));
    }
    fail("not a memstress trace: the first line must be '{}'", kTraceMagic);
  }

  void check_columns(std::string_view line) {
    const std::vector<std::string_view> columns = split_trace_fields(line);
    bool ok = columns.size() >= kColumns.size();
    for (std::size_t i = 0; ok && i < kColumns.size(); ++i) {
      ok = columns[i] == kColumns[i];
    }
    if (!ok) {
      fail("bad column header '{}' (expected '{}')", line, kTraceColumns);
    }
    num_columns_ = columns.size();
  }

  std::uint64_t number(std::string_view field, std::size_t column) const {
    bool too_large = false;
    const std::optional<std::uint64_t> value = parse_trace_number(field, &too_large);
    if (!value) {
      fail("column '{}': '{}' is not a non-negative integer{}", kColumns[column], field,
           too_large ? " (too large)" : "");
    }
    return *value;
  }

  void parse_event(std::string_view line) {
    const std::vector<std::string_view> f = split_trace_fields(line);
    if (f.size() != num_columns_) {
      fail("{} fields where the header has {} columns", f.size(), num_columns_);
    }
    TraceEvent event;
    event.seq = number(f[0], 0);
    if (any_seq_ && event.seq <= last_seq_) {
      fail("seq {} does not follow seq {}", event.seq, last_seq_);
    }
    any_seq_ = true;
    last_seq_ = event.seq;
    event.time_ns = number(f[1], 1);
    if (!is_trace_action_name(f[2])) {
      fail("bad action '{}'", f[2]);
    }
    const std::optional<TraceAction> action = trace_action_from(f[2]);
    if (!action) {
      ++trace_.skipped_actions[std::string(f[2])];
      return;
    }
    event.action = *action;
    if (event.action == TraceAction::oom) {
      if (!f[3].empty()) {
        fail("an oom line has no id (found '{}')", f[3]);
      }
    } else {
      event.id = number(f[3], 3);
    }
    event.bytes = number(f[4], 4);
    if (event.bytes > kMaxTraceBytes &&
        event.action != TraceAction::oom) {  // a request refused may ask anything
      fail("column 'bytes': {} is more memory than any device has (at most {} bytes, 256 TiB)", event.bytes,
           kMaxTraceBytes);
    }
    event.stream = number(f[5], 5);
    if (f[6].empty()) {
      fail("column 'device' is empty");
    }
    if (has_control_character(f[6])) {
      fail("column 'device': '{}' holds a control character", f[6]);
    }
    event.device = std::string(f[6]);
    pair(event);
    trace_.events.push_back(std::move(event));
  }

  // Checks that allocs and frees pair up: an id is allocated while not live and freed while live.
  void pair(const TraceEvent& event) {
    if (event.action == TraceAction::alloc) {
      const auto [it, inserted] = live_.try_emplace(*event.id, Live{event.bytes, line_number_});
      if (!inserted) {
        fail("alloc of id {}, which is already live (allocated on line {})", *event.id, it->second.line);
      }
      live_bytes_ += event.bytes;  // each at most kMaxTraceBytes, and their sum kept under it: cannot wrap
      if (live_bytes_ > kMaxTraceBytes) {
        fail("{} bytes live at once, more memory than any device has (at most {} bytes, 256 TiB)",
             live_bytes_, kMaxTraceBytes);
      }
    } else if (event.action == TraceAction::free) {
      const auto it = live_.find(*event.id);
      if (it == live_.end()) {
        fail("free of id {}, which is not live (never allocated, or already freed)", *event.id);
      }
      if (it->second.bytes != event.bytes) {
        fail("free of id {} names {} bytes; it was allocated with {} on line {}", *event.id, event.bytes,
             it->second.bytes, it->second.line);
      }
      live_bytes_ -= it->second.bytes;
      live_.erase(it);
    }
  }

  struct Live {
    std::uint64_t bytes;
    std::uint64_t line;
  };

  std::string_view name_;
  std::uint64_t line_number_ = 0;
  std::size_t num_columns_ = kColumns.size();
  bool any_seq_ = false;
  std::uint64_t last_seq_ = 0;
  std::unordered_map<std::uint64_t, Live> live_;
  std::uint64_t live_bytes_ = 0;
  Trace trace_;
};

}  // namespace

Trace parse_trace(std::istream& in, std::string_view name) {
  return Parser(name).parse(in);
}

Trace read_trace(const std::filesystem::path& path) {
  std::istringstream in(read_trace_file(path, "trace"));
  return parse_trace(in, path.string());
}

}  // namespace memstress
