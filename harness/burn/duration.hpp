#pragma once

// How long a burn runs, and how often it writes a row: "90" or "90s", "15m", "2h", "7d", fractions allowed
// ("0.5s", "1.5h"). A burn lasts from one second to seven days; an interval from a second to a minute (Note
// [A row a minute], loop.hpp), and a burn has at most kMaxIntervals of them (each a row kept in memory).

#include <string_view>

namespace memstress {

inline constexpr double kMaxBurnSeconds = 7.0 * 24 * 3600;
inline constexpr double kMinBurnSeconds = 1.0;
inline constexpr double kMaxIntervalSeconds = 60.0;
inline constexpr double kMinIntervalSeconds = 1;
inline constexpr int kMaxIntervals = 100'000;

// Seconds, from `text` as given to `what` (a flag or a profile key, named in the error). Throws InputError
// in one line for anything else: zero, negative, NaN, infinite, a unit it does not know, out of [min, max].
[[nodiscard]] double parse_duration(std::string_view text, std::string_view what, double min_s, double max_s);

}  // namespace memstress
