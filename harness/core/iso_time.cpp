#include "harness/core/iso_time.hpp"

#include <cstddef>

namespace memstress {
namespace {

// Reads exactly `digits` decimal digits at `at` into `value`; false where there are fewer.
bool number(std::string_view text, std::size_t& at, std::size_t digits, int& value) {
  if (text.size() < at + digits) {
    return false;
  }
  value = 0;
  for (std::size_t i = 0; i < digits; ++i) {
    const char c = text[at + i];
    if (c < '0' || c > '9') {
      return false;
    }
    value = value * 10 + (c - '0');
  }
  at += digits;
  return true;
}

bool take(std::string_view text, std::size_t& at, char c) {
  if (at < text.size() && text[at] == c) {
    ++at;
    return true;
  }
  return false;
}

int days_in_month(int year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[month - 1];
}

bool valid_zone(std::string_view text, std::size_t at, TimeZone zone) {
  if (at == text.size()) {
    return true;
  }
  if (text.substr(at) == "Z") {
    return true;
  }
  if (zone == TimeZone::utc_only || (text[at] != '+' && text[at] != '-')) {
    return false;
  }
  ++at;
  int hours = 0;
  int minutes = 0;
  if (!number(text, at, 2, hours) || hours > 23) {
    return false;
  }
  take(text, at, ':');
  return number(text, at, 2, minutes) && minutes <= 59 && at == text.size();
}

}  // namespace

bool valid_iso8601(std::string_view text, TimeZone zone) {
  std::size_t at = 0;
  int year = 0;
  int month = 0;
  int day = 0;
  if (!number(text, at, 4, year) || !take(text, at, '-') || !number(text, at, 2, month) ||
      !take(text, at, '-') || !number(text, at, 2, day)) {
    return false;
  }
  if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month)) {
    return false;
  }
  if (at == text.size()) {
    return true;
  }
  if (!take(text, at, 'T') && !take(text, at, ' ')) {
    return valid_zone(text, at, zone);
  }
  int hour = 0;
  if (!number(text, at, 2, hour) || hour > 23) {
    return false;
  }
  int minute = 0;
  if (take(text, at, ':')) {
    if (!number(text, at, 2, minute) || minute > 59) {
      return false;
    }
    int second = 0;
    if (take(text, at, ':')) {
      if (!number(text, at, 2, second) || second > 60) {
        return false;
      }
      if (take(text, at, '.')) {
        const std::size_t digits = at;
        while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
          ++at;
        }
        if (at == digits) {
          return false;
        }
      }
    }
  }
  return valid_zone(text, at, zone);
}

}  // namespace memstress
