#pragma once

// Google Benchmark (and Python's json module) write a NaN or an infinity as the bare words NaN,
// -NaN, Infinity and -Infinity, which are not JSON; a counter divided by zero is enough to get one
// (results/h200/bench-alloc-*.json has them). nlohmann::json rejects those words and has no option to
// take them, so this reads them as null (a value that is not there) and parses the rest strictly, its
// nesting bounded (Note [Bounded JSON input] in harness/core/json_input.hpp).

#include <nlohmann/json.hpp>
#include <string_view>

#include "harness/core/json_input.hpp"

namespace memstress {

// Throws InputError where the text is not JSON but for those words, or nests too deep. `first_word`, where
// given, is set to the offset of the first such word read as null (std::string_view::npos: none).
// `streamed`: as parse_json_input's.
nlohmann::json parse_json_allowing_nan(std::string_view text, std::size_t* first_word = nullptr,
                                       const StreamedArray* streamed = nullptr);

}  // namespace memstress
