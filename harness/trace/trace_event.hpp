#pragma once

// One line of a memstress trace (format: harness/trace/trace_format.md), shared by TraceWriter, which
// records them, and read_trace, which parses them back for replay.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memstress {

inline constexpr std::string_view kTraceMagic = "# memstress-trace v1";
inline constexpr std::string_view kTraceColumns = "seq,time_ns,action,id,bytes,stream,device";

// The actions of version 1. Readers skip well-formed actions they do not know (later versions add
// free_requested, free_completed, segment_alloc and segment_free), so this list may grow.
enum class TraceAction : std::uint8_t {
  alloc,  // an allocation succeeded: bytes = the requested size
  free,   // an allocation was freed: bytes = its requested size, stream = the stream it was made on
  oom,    // an allocation failed for lack of memory: bytes = the request; no id
};

[[nodiscard]] std::string_view to_string(TraceAction action) noexcept;
// The action named `name`, or nothing when v1 does not know it.
[[nodiscard]] std::optional<TraceAction> trace_action_from(std::string_view name) noexcept;

struct TraceEvent {
  std::uint64_t seq = 0;      // 0, 1, 2, … in file order
  std::uint64_t time_ns = 0;  // steady clock, since the trace started
  TraceAction action = TraceAction::alloc;
  std::optional<std::uint64_t> id;  // the allocation's identity in this trace; none for oom
  std::uint64_t bytes = 0;
  std::uint64_t stream = 0;  // opaque identity; 0 = the legacy default stream
  std::string device;        // "cuda:0", "sim:80G"

  friend bool operator==(const TraceEvent&, const TraceEvent&) = default;
};

}  // namespace memstress
