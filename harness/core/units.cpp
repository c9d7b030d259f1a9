#include "harness/core/units.hpp"

#include <fmt/format.h>

#include <algorithm>
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
  // Exact integer arithmetic, so that every size up to 2^64 - 1 is the size written (a double would turn
  // 9007199254740993 into ...992): the whole part, and the fraction's digits over a power of ten.
  const std::string_view number = text.substr(0, digits_end);
  const std::size_t dot = number.find('.');
  const std::string_view whole = number.substr(0, dot);
  std::string_view fraction = dot == std::string_view::npos ? std::string_view{} : number.substr(dot + 1);
  if ((whole.empty() && fraction.empty()) || fraction.find('.') != std::string_view::npos) {
    return fail("bad number");
  }
  while (!fraction.empty() && fraction.back() == '0') {
    fraction.remove_suffix(1);
  }
  __extension__ using Wide = unsigned __int128;  // GCC and Clang: room for whole x scale and fraction x scale
  constexpr Wide kMax = std::numeric_limits<std::uint64_t>::max();
  Wide whole_value = 0;
  for (const char c : whole) {
    whole_value = whole_value * 10 + static_cast<unsigned>(c - '0');
    if (whole_value > kMax) {
      return fail("too large");
    }
  }
  constexpr std::size_t kMaxFractionDigits = 24;  // beyond: never whole for these scales
  if (fraction.size() > kMaxFractionDigits) {
    return fail("not a whole number of bytes");
  }
  Wide fraction_value = 0;
  Wide tenth_power = 1;
  for (const char c : fraction) {
    fraction_value = fraction_value * 10 + static_cast<unsigned>(c - '0');
    tenth_power *= 10;
  }
  const std::string_view suffix = text.substr(digits_end);
  for (const Suffix& s : kSuffixes) {
    if (iequals(suffix, s.text)) {
      const auto scale = static_cast<Wide>(s.scale);
      const Wide scaled_fraction = fraction_value * scale;
      if (scaled_fraction % tenth_power != 0) {
        return fail("not a whole number of bytes");
      }
      const Wide bytes = whole_value * scale + scaled_fraction / tenth_power;
      if (bytes > kMax) {
        return fail("too large");
      }
      return static_cast<std::uint64_t>(bytes);
    }
  }
  return fail(fmt::format("unknown suffix '{}'", suffix));
}

std::uint64_t parse_whole_number(std::string_view text, std::string_view what) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  const bool digits =
      !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || ec != std::errc{} || ptr != end) {
    throw InputError(fmt::format("{} '{}': expected a whole number from 0 to {}", what, text,
                                 std::numeric_limits<std::uint64_t>::max()));
  }
  return value;
}

std::string format_bytes(std::uint64_t bytes) {
  constexpr std::array<std::string_view, 5> kUnits{"B", "K", "M", "G", "T"};
  std::size_t unit = 0;
  std::uint64_t value = bytes;
  while (unit + 1 < kUnits.size() && value >= 1024 && value % 1024 == 0) {
    value /= 1024;
    ++unit;
  }
  if (value < 1024ULL * 1024 || unit + 1 == kUnits.size()) {
    return fmt::format("{}{}", value, kUnits[unit]);
  }
  // Large and not exact at the next unit: show a rounded figure in the largest fitting unit.
  auto scaled = static_cast<double>(bytes);
  std::size_t big = 0;
  while (big + 1 < kUnits.size() && scaled >= 1024.0) {
    scaled /= 1024.0;
    ++big;
  }
  return fmt::format("{:.2f}{}", scaled, kUnits[big]);
}

std::string exact_bytes(std::uint64_t bytes) {
  constexpr std::array<std::string_view, 5> kUnits{"B", "K", "M", "G", "T"};
  std::size_t unit = 0;
  std::uint64_t value = bytes;
  while (unit + 1 < kUnits.size() && value >= 1024 && value % 1024 == 0) {
    value /= 1024;
    ++unit;
  }
  return fmt::format("{}{}", value, kUnits[unit]);
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
                                      std::uint64_t increment, const SizeSweepNames& names,
                                      std::size_t max_sizes) {
  if (begin == 0) {
    throw InputError(fmt::format("{}: the first size must be at least 1 byte", names.begin));
  }
  if (end < begin) {
    throw InputError(fmt::format("{} ({}) is smaller than {} ({})", names.end, format_bytes(end), names.begin,
                                 format_bytes(begin)));
  }
  if (increment == 0 && (!(factor > 1.0) || !std::isfinite(factor))) {
    throw InputError(fmt::format("{} must be a finite number greater than 1, not {}", names.factor, factor));
  }
  // 2^64 as a double: a step at or past it ends the sweep (it is past any end).
  constexpr double kPastLast = 18446744073709551616.0;
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t size = begin; size <= end;) {
    if (sizes.size() == max_sizes) {
      throw InputError(fmt::format(
          "{}: the sweep from {} to {} has more than {} {} sizes; narrow it, or raise {} if you "
          "mean it",
          names.sweep, format_bytes(begin), format_bytes(end), names.limit, max_sizes, names.limit));
    }
    sizes.push_back(size);
    std::uint64_t next = 0;
    if (increment != 0) {
      if (increment > std::numeric_limits<std::uint64_t>::max() - size) {
        break;
      }
      next = size + increment;
    } else {
      // Rounded down to a whole byte as nccl-tests does, where a product within a billionth of a whole
      // number is that number (100 x 1.15 is 114.99999999999999 in doubles: 115, not 114).
      const double product = static_cast<double>(size) * factor;
      const double nearest = std::round(product);
      const double whole = std::fabs(product - nearest) <= product * 1e-9 ? nearest : std::floor(product);
      if (whole >= kPastLast) {
        break;
      }
      // At least one byte more than this step (a factor barely above 1), so the sizes strictly increase.
      next = std::max(static_cast<std::uint64_t>(whole), size + 1);
    }
    if (next <= size) {
      break;  // size was 2^64 - 1
    }
    size = next;
  }
  return sizes;
}

}  // namespace memstress
