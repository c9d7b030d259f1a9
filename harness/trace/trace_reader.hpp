#pragma once

// Reading a memstress trace back (format: harness/trace/trace_format.md), for replay and for tests.
//
// Design note. The reader is strict about what v1 defines and lenient about what it does not: the two
// header lines, numbers, ids and the pairing of alloc and free are checked, and the first problem is
// an InputError "<file>:<line>: <what>" (a last line without its newline too: the writer ends every
// line with one, so that line was cut short by a crash); lines whose action is a well-formed name v1 does not
// know are counted and skipped (their seq must still increase), so v1 readers accept later traces. Comment
// lines ('#') and blank lines after the header are ignored. The whole trace is held in memory (about
// 60 bytes per event).

#include <cstdint>
#include <filesystem>
#include <istream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "harness/trace/trace_event.hpp"

namespace memstress {

// The most bytes an allocation may name, and the most live at once: 256 TiB, beyond any device (a size of
// 2^63 would wrap the sums of what is live, and a doctor would say "needed 0 bytes"). Larger is refused; an
// `oom` line (a request refused) may ask for anything.
inline constexpr std::uint64_t kMaxTraceBytes = 1ULL << 48U;

struct Trace {
  std::vector<TraceEvent> events;  // the v1 events, in file order
  // Lines skipped because v1 does not know their action: action name -> number of lines.
  std::map<std::string, std::uint64_t, std::less<>> skipped_actions;
};

// Reads the trace at `path`. Throws InputError naming the file (and line) when it cannot be read or is
// not a valid v1 trace.
[[nodiscard]] Trace read_trace(const std::filesystem::path& path);
// The same from a stream; `name` is what error messages call it.
[[nodiscard]] Trace parse_trace(std::istream& in, std::string_view name);

}  // namespace memstress
