#pragma once

// Note [Bounded JSON input]
//
// Every JSON text memstress reads (results documents and `.jsonl` streams, Google Benchmark JSON, the
// rows and environments other ranks send) is parsed by parse_json_input, never by nlohmann::json::parse
// directly. Results come from other machines and other people, and nesting is the one thing about them
// that can hurt us before we look at a single field: nlohmann::json parses iteratively, so a value nested
// 100,000 levels deep parses fine, but its copy constructor, dump(), operator== and get<> recurse once a
// level, and the first copy overflows the stack (issue 20: `"[" * 100000` in a row's params crashed
// `compare` and `accept` with SIGSEGV).
//
// So the depth is bounded before the value exists: check_json_depth scans the text once, counting the
// arrays and objects open outside strings, and refuses a text nested deeper than kMaxJsonDepth with an
// InputError (exit 2) that gives the line and column. Real documents are less than 10 deep; 128 is
// generous for other tools' JSON and still far from any stack limit. On valid JSON the scan is exact
// (where strings start and end is unambiguous there); on invalid JSON whatever it counts is followed by the
// parse's own refusal. A string never spans a line (JSON has no raw newline in one), so the scan of a
// `.jsonl` stream as a whole is at least as strict as a scan of each line: compare bounds a stream once,
// then parses its lines. scripts/ms_json.py applies the same bound to the Python readers.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

namespace memstress {

inline constexpr std::size_t kMaxJsonDepth = 128;

// Throws InputError ("nested more than 128 levels deep (line L, column C)") where arrays and objects
// nest deeper than `limit` in `text`.
void check_json_depth(std::string_view text, std::size_t limit = kMaxJsonDepth);

// One JSON value, its depth checked first. Throws InputError: "nested more than ..." or "not JSON (...)",
// a number too large for a double ("1e400") included.
// The message does not name the input: the caller, which knows its name, prefixes it.
[[nodiscard]] nlohmann::json parse_json_input(std::string_view text);

}  // namespace memstress
