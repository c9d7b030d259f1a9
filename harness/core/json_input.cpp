#include "harness/core/json_input.hpp"

#include <fmt/format.h>

#include "harness/core/error.hpp"
#include "harness/core/json_dom.hpp"

namespace memstress {

void check_json_depth(std::string_view text, std::size_t limit) {
  std::size_t depth = 0;
  std::size_t line = 1;
  std::size_t line_start = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {  // never inside a JSON string: a line is scanned as if alone (a stream's lines are)
      ++line;
      line_start = i + 1;
      in_string = false;
      continue;
    }
    if (in_string) {
      if (c == '\\' && i + 1 < text.size() && text[i + 1] != '\n') {
        ++i;  // the escaped character, a quote included
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) {
        throw InputError(fmt::format("nested more than {} levels deep (line {}, column {}): refused", limit,
                                     line, i - line_start + 1));
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

nlohmann::json parse_json_input(std::string_view text, const StreamedArray* streamed) {
  check_json_depth(text);
  try {
    return build_json(text, /*allow_exceptions=*/true, streamed);
  } catch (const nlohmann::json::exception& e) {
    // parse_error, and out_of_range for a number beyond a double ("1e400": error 406, not a parse_error)
    throw InputError(fmt::format("not JSON ({})", e.what()));
  }
}

nlohmann::json parse_json_line(std::string_view line) {
  try {
    return build_json(line, /*allow_exceptions=*/false, nullptr);
  } catch (const nlohmann::json::exception&) {
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
}

}  // namespace memstress
