#include "harness/run/quantity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

namespace memstress {
namespace {

constexpr int kSignificant = 4;
constexpr double kKi = 1024.0;

// Bytes per one of `unit` ("bytes", "KiB", ...), or nothing for another unit.
std::optional<double> bytes_per(std::string_view unit) {
  static constexpr std::array<std::string_view, 5> kNames{"bytes", "KiB", "MiB", "GiB", "TiB"};
  double per = 1;
  for (const std::string_view name : kNames) {
    if (unit == name) {
      return per;
    }
    per *= kKi;
  }
  return unit == "B" ? std::optional<double>(1) : std::nullopt;
}

// Seconds per one of `unit` ("s", "ms", "us", "ns"), or nothing for another unit.
std::optional<double> seconds_per(std::string_view unit) {
  if (unit == "s") {
    return 1.0;
  }
  if (unit == "ms") {
    return 1e-3;
  }
  if (unit == "us") {
    return 1e-6;
  }
  if (unit == "ns") {
    return 1e-9;
  }
  return std::nullopt;
}

// `magnitude` of a unit worth `per` bytes, in B .. TiB, with `suffix` ("/epoch") after the unit.
DisplayScale binary(double magnitude, double per, std::string_view suffix) {
  static constexpr std::array<std::string_view, 5> kNames{"B", "KiB", "MiB", "GiB", "TiB"};
  const double bytes = std::fabs(magnitude) * per;
  double divisor = 1;
  std::size_t i = 0;
  while (i + 1 < kNames.size() && std::isfinite(bytes) && bytes >= divisor * kKi) {
    divisor *= kKi;
    ++i;
  }
  return {divisor / per, fmt::format("{}{}", kNames[i], suffix)};
}

DisplayScale time(double magnitude, double per, std::string_view recorded) {
  const double seconds = std::fabs(magnitude) * per;
  if (seconds == 0 || !std::isfinite(seconds)) {
    return {1, std::string(recorded)};
  }
  static constexpr std::array<std::pair<double, std::string_view>, 3> kUnits{
      {{1.0, "s"}, {1e-3, "ms"}, {1e-6, "us"}}};
  for (const auto& [unit_seconds, name] : kUnits) {
    if (seconds >= unit_seconds) {
      return {unit_seconds / per, std::string(name)};
    }
  }
  return {1e-9 / per, "ns"};
}

// A rate other than GB/s ("ops/s"): k, M or G before it, glued to the number ("4.252M ops/s").
DisplayScale rate(double magnitude, std::string_view unit) {
  static constexpr std::array<std::pair<double, char>, 3> kPrefixes{{{1e9, 'G'}, {1e6, 'M'}, {1e3, 'k'}}};
  const double a = std::fabs(magnitude);
  for (const auto& [divisor, prefix] : kPrefixes) {
    if (std::isfinite(a) && a >= divisor) {
      return {divisor, fmt::format("{} {}", prefix, unit), true};
    }
  }
  return {1, std::string(unit)};
}

}  // namespace

DisplayScale display_scale(double magnitude, std::string_view unit) {
  if (const auto per = bytes_per(unit)) {
    return binary(magnitude, *per, "");
  }
  if (unit.starts_with("bytes/")) {  // "bytes/epoch"
    return binary(magnitude, 1, unit.substr(std::string_view("bytes").size()));
  }
  if (const auto per = seconds_per(unit)) {
    return time(magnitude, *per, unit);
  }
  if (unit == "GB/s") {
    return {1, "GB/s"};
  }
  if (unit.ends_with("/s")) {
    return rate(magnitude, unit);
  }
  if (unit == "share" || unit == "share of total") {
    return {0.01, "%", true};
  }
  if (unit == "count" || unit == "ratio") {
    return {1, ""};
  }
  return {1, std::string(unit)};
}

std::string format_number(double value) {
  if (std::isnan(value)) {
    return "nan";
  }
  if (std::isinf(value)) {
    return value > 0 ? "inf" : "-inf";
  }
  if (value == 0) {
    return "0";
  }
  const int whole_digits = static_cast<int>(std::floor(std::log10(std::fabs(value)))) + 1;
  const int decimals = std::max(0, kSignificant - whole_digits);
  std::string text = fmt::format("{:.{}f}", value, decimals);
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') {
      text.pop_back();
    }
    if (text.back() == '.') {
      text.pop_back();
    }
  }
  return text == "-0" ? "0" : text;
}

std::string format_scaled(double value, const DisplayScale& scale) {
  const std::string number = format_number(value / scale.divisor);
  if (scale.unit.empty()) {
    return number;
  }
  return number + (scale.glued ? "" : " ") + scale.unit;
}

std::string format_quantity(double value, std::string_view unit) {
  return format_scaled(value, display_scale(value, unit));
}

}  // namespace memstress
