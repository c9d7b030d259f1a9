#include "harness/core/json_text.hpp"

namespace memstress {

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string valid_utf8(const std::string& text) {
  // The library's own decoder decides what is valid; dumping a string gives it quoted and escaped, so
  // reading the dump back yields the text with U+FFFD for each bad sequence.
  const std::string quoted =
      nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return nlohmann::json::parse(quoted).get<std::string>();
}

}  // namespace memstress
