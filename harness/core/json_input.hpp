#pragma once

// Note [Bounded JSON input]
//
// Every JSON text memstress reads (results documents and `.jsonl` streams, Google Benchmark JSON, the
// rows and environments other ranks send) is parsed by parse_json_input, never by nlohmann::json::parse
// directly. Results come from other machines and other people, and nesting is the one thing about them
// that can hurt us before we look at a single field: nlohmann::json parses iteratively, so a value nested
// 100,000 levels deep parses fine, but its copy constructor, dump(), operator== and get<> recurse once a
// level, and the first copy overflows the stack (`"[" * 100000` in a row's params crashed
// `compare` and `accept` with SIGSEGV).
//
// So the depth is bounded before the value exists: check_json_depth scans the text once, counting the
// arrays and objects open outside strings, and refuses a text nested deeper than kMaxJsonDepth with an
// InputError (exit 2) that gives the line and column. Real documents are less than 10 deep; 128 is
// generous for other tools' JSON and still far from any stack limit. On valid JSON the scan is exact
// (where strings start and end is unambiguous there); on invalid JSON whatever it counts is followed by the
// parse's own refusal. A string never spans a line (JSON has no raw newline in one), so the scan of a
// `.jsonl` stream as a whole is at least as strict as a scan of each line: compare bounds a stream once,
// then parses its lines. python/memstress/_json.py applies the same bound to the Python readers.

// Note [Duplicate keys]
// JSON leaves an object with a key twice to the reader, and nlohmann::json keeps the last: a results
// document with a second, empty "rows" was read as a run without rows, exit 0. parse_json_input refuses
// it instead (InputError naming the key and where it is), as every other ambiguity in an input is refused.
// The keys of each open object are remembered while it is parsed (a list while short, a hash set once
// long, so an object of a million keys costs no more than a million lookups).

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string_view>

namespace memstress {

inline constexpr std::size_t kMaxJsonDepth = 128;

// Throws InputError ("nested more than 128 levels deep (line L, column C)") where arrays and objects
// nest deeper than `limit` in `text`.
void check_json_depth(std::string_view text, std::size_t limit = kMaxJsonDepth);

// One JSON value, its depth checked first. Throws InputError: "nested more than ...", "not JSON (...)",
// a number too large for a double ("1e400") included, or "key \"rows\" twice in one object (at /)" (Note
// [Duplicate keys]).
// The message does not name the input: the caller, which knows its name, prefixes it.
//
// `streamed`: the elements of one array, the top-level object's member `key` (a results document's "rows",
// nearly all of it), are handed to `take` one by one as each is parsed, and not kept: the value returned
// holds that member as an empty array. A document is then never held whole as JSON, which costs several
// times its text (Note [Bounded JSON input]).
struct StreamedArray {
  std::string_view key;
  std::function<void(nlohmann::json&& element, std::size_t index)> take;
};
[[nodiscard]] nlohmann::json parse_json_input(std::string_view text, const StreamedArray* streamed = nullptr);

// The same for one line of a stream, whose depth the caller checked with the whole text: a value
// discarded (is_discarded()) where the line is not JSON; still throws InputError on a duplicate key.
[[nodiscard]] nlohmann::json parse_json_line(std::string_view line);

}  // namespace memstress
