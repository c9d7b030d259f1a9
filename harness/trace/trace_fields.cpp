#include "harness/trace/trace_fields.hpp"

#include <algorithm>
#include <charconv>

namespace memstress {

std::vector<std::string_view> split_trace_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      fields.push_back(line.substr(start));
      return fields;
    }
    fields.push_back(line.substr(start, comma - start));
    start = comma + 1;
  }
}

bool is_trace_action_name(std::string_view text) noexcept {
  if (text.empty() || text.front() < 'a' || text.front() > 'z') {
    return false;
  }
  for (const char c : text) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
      return false;
    }
  }
  return true;
}

bool has_control_character(std::string_view text) noexcept {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f;
  });
}

std::optional<std::uint64_t> parse_trace_number(std::string_view field, bool* too_large) noexcept {
  std::uint64_t value = 0;
  const char* end = field.data() + field.size();
  const auto [ptr, ec] = std::from_chars(field.data(), end, value);
  if (too_large != nullptr) {
    *too_large = ec == std::errc::result_out_of_range;
  }
  if (field.empty() || ec != std::errc{} || ptr != end) {
    return std::nullopt;
  }
  return value;
}

}  // namespace memstress
