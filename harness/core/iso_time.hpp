#pragma once

// Times as results files and flags write them: ISO 8601, "2026-11-21T14:03:05Z", with the calendar checked
// (a --since of 2026-02-31 or a started_at of 2026-13-45 is no time at all, and compared as text it would
// silently select something).

#include <string_view>

namespace memstress {

enum class TimeZone {
  utc_only,    // "Z" or nothing (memstress's own times, --since: compared as text)
  any_offset,  // also "+02:00", "-0500" (Google Benchmark's context.date is local time)
};

// Whether `text` is a date ("2026-11-21"), optionally followed by a time of day ("T14", "T14:03",
// "T14:03:05", "T14:03:05.123", 'T' or a space before it) and a zone, every field in range: month 1-12, the
// day in its month (leap years included), hour 0-23, minute 0-59, second 0-60 (a leap second).
[[nodiscard]] bool valid_iso8601(std::string_view text, TimeZone zone);

}  // namespace memstress
