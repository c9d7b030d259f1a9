#pragma once

// The JSON value builder under parse_json_input (json_input.hpp): nlohmann::json's SAX parser feeding a
// builder of our own, which refuses a key twice in one object (Note [Duplicate keys]) and hands the
// elements of one top-level array over as each is parsed (StreamedArray). Internal to harness/core.

#include <nlohmann/json.hpp>
#include <string_view>

#include "harness/core/json_input.hpp"

namespace memstress {

// The value `text` holds. Not JSON: nlohmann's exception where `allow_exceptions`, else a discarded value.
// A key twice: InputError either way. The caller bounds the depth first (check_json_depth).
nlohmann::json build_json(std::string_view text, bool allow_exceptions, const StreamedArray* streamed);

}  // namespace memstress
