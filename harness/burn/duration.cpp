#include "harness/burn/duration.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <string>

#include "harness/core/error.hpp"

namespace memstress {
namespace {

std::string shown(double seconds) {
  if (seconds >= 24 * 3600) {
    return fmt::format("{:g} days", seconds / (24 * 3600));
  }
  return seconds >= 60 ? fmt::format("{:g} minutes", seconds / 60) : fmt::format("{:g} s", seconds);
}

}  // namespace

double parse_duration(std::string_view text, std::string_view what, double min_s, double max_s) {
  const std::string quoted(text.substr(0, std::min<std::size_t>(text.size(), 40)));
  const auto refuse = [&](std::string_view why) {
    return InputError(
        fmt::format("{} '{}': {}; expected a duration from {} to {}, such as 90s, 15m, 2h or 7d", what,
                    quoted, why, shown(min_s), shown(max_s)));
  };
  std::size_t digits = text.size();
  double scale = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 's':
        digits -= 1;
        break;
      case 'm':
        scale = 60;
        digits -= 1;
        break;
      case 'h':
        scale = 3600;
        digits -= 1;
        break;
      case 'd':
        scale = 24 * 3600;
        digits -= 1;
        break;
      default:
        break;
    }
  }
  double value = 0;
  const char* first = text.data();
  const char* last = first + digits;
  const auto [end, ec] = std::from_chars(first, last, value, std::chars_format::fixed);
  if (digits == 0 || ec != std::errc{} || end != last) {
    throw refuse("not a number of seconds, minutes (m), hours (h) or days (d)");
  }
  const double seconds = value * scale;
  if (!std::isfinite(seconds) || !(seconds > 0)) {
    throw refuse("must be more than zero");
  }
  if (seconds < min_s || seconds > max_s) {
    throw refuse(seconds < min_s ? "too short" : "too long");
  }
  return seconds;
}

}  // namespace memstress
