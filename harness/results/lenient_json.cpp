#include "harness/results/lenient_json.hpp"

#include <array>
#include <span>
#include <string>

#include "harness/core/json_input.hpp"

namespace memstress {

nlohmann::json parse_json_allowing_nan(std::string_view text, std::size_t* first_word,
                                       const StreamedArray* streamed) {
  static constexpr std::array<std::string_view, 4> kWords{"-Infinity", "Infinity", "-NaN", "NaN"};
  if (first_word != nullptr) {
    *first_word = std::string_view::npos;
  }
  // Most files have neither word anywhere: nothing to rewrite (the fleet store ingests thousands).
  if (text.find("NaN") == std::string_view::npos && text.find("Infinity") == std::string_view::npos) {
    return parse_json_input(text, streamed);
  }
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];  // the escaped character, a quote included
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      continue;
    }
    bool replaced = false;
    const bool may_start = c == 'N' || c == 'I' || c == '-';
    for (const std::string_view word :
         may_start ? std::span<const std::string_view>(kWords) : std::span<const std::string_view>()) {
      if (text.substr(i, word.size()) == word) {
        if (first_word != nullptr && *first_word == std::string_view::npos) {
          *first_word = i;
        }
        out += "null";
        i += word.size() - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) {
      out += c;
    }
  }
  return parse_json_input(out, streamed);
}

}  // namespace memstress
