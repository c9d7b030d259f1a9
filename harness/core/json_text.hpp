#pragma once

// JSON as text for everything memstress writes (results, snapshots, reports on stdout). Strings that
// reach a document come from outside — paths, argv, environment variables, a trace's device label, a
// profile's name — and need not be UTF-8; nlohmann::json::dump throws on such bytes by default (an
// "internal error" after the whole run). Here every byte that is not valid UTF-8 becomes U+FFFD, so a
// document is always written and always valid JSON.

#include <nlohmann/json.hpp>
#include <string>

namespace memstress {

// `j` as JSON text; `indent` < 0: one line. Invalid UTF-8 is replaced with U+FFFD, never thrown.
[[nodiscard]] std::string json_text(const nlohmann::json& j, int indent = -1);

// `text` with every byte sequence that is not valid UTF-8 replaced with U+FFFD (for XML and tables).
[[nodiscard]] std::string valid_utf8(const std::string& text);

}  // namespace memstress
