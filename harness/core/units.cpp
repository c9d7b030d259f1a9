#include "harness/core/units.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <limits>

#include "harness/core/error.hpp"

namespace memstress {
namespace {

struct Suffix {
  std::string_view text;
  double scale;
};

constexpr std::array<Suffix, 14> kSuffixes{{
    {"KiB", 1024.0},
    {"MiB", 1024.0 * 1024},
    {"GiB", 1024.0 * 1024 * 1024},
    {"TiB", 1024.0 * 1024 * 1024 * 1024},
    {"KB", 1e3},
    {"MB", 1e6},
    {"GB", 1e9},
    {"TB", 1e12},
    {"K", 1024.0},
    {"M", 1024.0 * 1024},
    {"G", 1024.0 * 1024 * 1024},
    {"T", 1024.0 * 1024 * 1024 * 1024},
    {"B", 1.0},
    {"", 1.0},
}};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::uint64_t parse_bytes(std::string_view text, std::string_view what) {
  const auto fail = [&](std::string_view why) -> std::uint64_t {
    throw InputError(fmt::format("{}: '{}' is not a size ({}); write e.g. 512, 64K, 1M, 8G, 80GiB or 40GB",
                                 what, text, why));
  };
  std::size_t digits_end = 0;
  while (digits_end < text.size() &&
         ((text[digits_end] >= '0' && text[digits_end] <= '9') || text[digits_end] == '.')) {
    ++digits_end;
  }
  if (digits_end == 0) {
    return fail("no number");
  }
  double number = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + digits_end, number);
  if (ec != std::errc{} || ptr != text.data() + digits_end) {
    return fail("bad number");
  }
  const std::string_view suffix = text.substr(digits_end);
  for (const Suffix& s : kSuffixes) {
    if (iequals(suffix, s.text)) {
      const double bytes = number * s.scale;
      if (bytes >= static_cast<double>(std::numeric_limits<std::uint64_t>::max())) {
        return fail("too large");
      }
      if (bytes != std::floor(bytes)) {
        return fail("not a whole number of bytes");
      }
      return static_cast<std::uint64_t>(bytes);
    }
  }
  return fail(fmt::format("unknown suffix '{}'", suffix));
}

std::string format_bytes(std::uint64_t bytes) {
  constexpr std::array<std::string_view, 5> kUnits{"B", "K", "M", "G", "T"};
  std::size_t unit = 0;
  std::uint64_t value = bytes;
  while (unit + 1 < kUnits.size() && value >= 1024 && value % 1024 == 0) {
    value /= 1024;
    ++unit;
  }
  if (value < 1024 * 1024 || unit + 1 == kUnits.size()) {
    return fmt::format("{}{}", value, kUnits[unit]);
  }
  // Large and not exact at the next unit: show a rounded figure in the largest fitting unit.
  double scaled = static_cast<double>(bytes);
  std::size_t big = 0;
  while (big + 1 < kUnits.size() && scaled >= 1024.0) {
    scaled /= 1024.0;
    ++big;
  }
  return fmt::format("{:.2f}{}", scaled, kUnits[big]);
}

std::string exact_bytes(std::uint64_t bytes) {
  std::string text = format_bytes(bytes);
  return text.find('.') == std::string::npos ? text : std::to_string(bytes);
}

std::string human_bytes(std::uint64_t bytes) {
  const auto b = static_cast<double>(bytes);
  if (bytes <= 1024) {
    return fmt::format("{} bytes", bytes);
  }
  if (bytes <= (1ULL << 20)) {
    return fmt::format("{:.2f} KiB", b / 1024.0);
  }
  if (bytes <= (1ULL << 30)) {
    return fmt::format("{:.2f} MiB", b / (1024.0 * 1024.0));
  }
  return fmt::format("{:.2f} GiB", b / (1024.0 * 1024.0 * 1024.0));
}

std::vector<std::uint64_t> size_sweep(std::uint64_t begin, std::uint64_t end, double factor,
                                      std::uint64_t increment, std::size_t max_sizes) {
  if (begin == 0) {
    throw InputError("-b/--minbytes: the first size must be at least 1 byte");
  }
  if (end < begin) {
    throw InputError(fmt::format("-e/--maxbytes ({}) is smaller than -b/--minbytes ({})", format_bytes(end),
                                 format_bytes(begin)));
  }
  if (increment == 0 && !(factor > 1.0)) {
    throw InputError(fmt::format("-f/--stepfactor must be greater than 1, not {}", factor));
  }
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t size = begin; size <= end;) {
    if (sizes.size() == max_sizes) {
      throw InputError(
          fmt::format("-b/-e/-f: the sweep from {} to {} has more than --max-cases {} sizes; narrow "
                      "it, or raise --max-cases if you mean it",
                      format_bytes(begin), format_bytes(end), max_sizes));
    }
    sizes.push_back(size);
    std::uint64_t next = 0;
    if (increment != 0) {
      next = size + increment;  // wraps past 2^64: caught below
    } else {
      // A product of 2^64 or more is past any end, and converting it would be undefined (-f 8e38 did;
      // found by fuzz/params.cpp, fuzz/regressions/params/factor-8e38.txt).
      const double scaled = std::ceil(static_cast<double>(size) * factor);
      if (!(scaled < 18446744073709551616.0)) {
        break;
      }
      next = static_cast<std::uint64_t>(scaled);
    }
    if (next <= size) {
      break;  // overflow guard
    }
    size = next;
  }
  return sizes;
}

}  // namespace memstress
