#pragma once

// A trace as replay reads it: every action trace_format.md defines (v1's three and those beyond them),
// of every device, plain or gzip-compressed.
//
// Design note. The v1 reader (harness/trace/trace_reader.hpp) is strict about the pairing of alloc and
// free; replay cannot be, since a converted trace may free blocks allocated before recording began and
// a replayed allocation may fail where the recorded one did not. So this reader checks only the shape
// (header lines, fields, numbers, increasing seq, ids where an action needs one) and leaves the pairing
// to the replayer, which skips and counts what does not pair. Device labels are interned: an event
// holds the index of its device in `devices` (order of first appearance). About 48 bytes per event.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memstress::replay {

enum class Action : std::uint8_t {
  alloc,           // bytes = the requested size
  free,            // PyTorch's free_requested: the program gave the block back
  free_completed,  // the block became reusable (its other streams' work finished)
  oom,             // the recorded program's request failed
  segment_alloc,   // the recorded allocator reserved a segment (bytes)
  segment_free,    // … and released one
  segment_map,     // expandable segments: bytes mapped
  segment_unmap,   // … and unmapped
};

[[nodiscard]] std::string_view to_string(Action action) noexcept;

struct Event {
  std::uint64_t seq = 0;
  std::uint64_t time_ns = 0;
  std::uint64_t id = 0;  // 0 where the action has none
  std::uint64_t bytes = 0;
  std::uint64_t stream = 0;
  std::uint32_t device = 0;  // index into ReplayTrace::devices
  Action action = Action::alloc;

  bool operator==(const Event&) const = default;
};

struct ReplayTrace {
  std::string name;                  // what messages call it (the path)
  std::vector<std::string> devices;  // labels, in order of first appearance
  std::vector<Event> events;         // file order, all devices
  // Well-formed actions the format does not define: name -> lines skipped.
  std::map<std::string, std::uint64_t, std::less<>> skipped_actions;
};

// The index of device `wanted` in trace.devices ("" is the first). Throws InputError naming `what` (the
// command's flag that gave `wanted`) when the trace has no such device, and the trace when it has none at
// all.
[[nodiscard]] std::uint32_t device_index(const ReplayTrace& trace, const std::string& wanted,
                                         std::string_view what);

// The OOM the recorded program died of on `device`: the index of its first `oom` line with no allocation of
// the device after it; nothing where every oom line has one (later lines came while it was already failing).
// Every oom line before it is one the program survived (a library that asked for a large workspace, caught
// the refusal and went on with less: cuDNN).
[[nodiscard]] std::optional<std::size_t> fatal_oom(const ReplayTrace& trace, std::uint32_t device);

// Throws InputError "<name>:<line>: <what>" (or naming the file) on anything that is not a trace.
[[nodiscard]] ReplayTrace read_replay_trace(const std::filesystem::path& path);
// The same, its messages naming `name` (a snapshot converted to the trace at `path`: the user's file).
[[nodiscard]] ReplayTrace read_replay_trace(const std::filesystem::path& path, const std::string& name);
[[nodiscard]] ReplayTrace parse_replay_trace(std::string_view text, std::string_view name);
// The trace as a memstress trace file's text (what parse_replay_trace reads back), `comment` as its
// first comment line; skipped actions are not kept.
[[nodiscard]] std::string format_replay_trace(const ReplayTrace& trace, std::string_view comment);

}  // namespace memstress::replay
