#pragma once

// The field-level rules of a memstress trace line (harness/trace/trace_format.md), shared by the strict
// v1 reader (trace_reader.hpp) and the replay reader (harness/replay/replay_trace.hpp).

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace memstress {

// The comma-separated fields of a line (no quoting: no field contains a comma).
std::vector<std::string_view> split_trace_fields(std::string_view line);

// Whether `text` is a well-formed action name: [a-z][a-z0-9_]*.
bool is_trace_action_name(std::string_view text) noexcept;

// Whether `text` holds a control character (a byte below 0x20, or 0x7f): a device label may not. A '\r'
// inside a line (a column appended after `device` puts it there) was kept in the label, and lost when the
// trace was written again with the label last, where '\r' ends a line (the round trip
// fuzz/replay_trace.cpp checks).
bool has_control_character(std::string_view text) noexcept;

// A non-negative decimal integer that fits 64 bits; nothing otherwise (`too_large` says why when set).
std::optional<std::uint64_t> parse_trace_number(std::string_view field, bool* too_large = nullptr) noexcept;

}  // namespace memstress
