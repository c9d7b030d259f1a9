#include "harness/run/params.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "harness/core/error.hpp"
#include "harness/core/units.hpp"

namespace memstress {
namespace {

template <typename T>
std::optional<T> parse_number(std::string_view text) {
  T value{};
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || ptr != text.data() + text.size() || text.empty()) {
    return std::nullopt;
  }
  return value;
}

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(separator, start);
    parts.emplace_back(
        text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) {
      return parts;
    }
    start = end + 1;
  }
}

}  // namespace

std::string_view to_string(ParamType type) noexcept {
  switch (type) {
    case ParamType::integer:
      return "integer";
    case ParamType::bytes:
      return "size";
    case ParamType::real:
      return "number";
    case ParamType::boolean:
      return "bool";
    case ParamType::choice:
      return "choice";
    case ParamType::text:
      return "text";
  }
  return "text";
}

std::string ParamSpec::bound_text(double bound) const {
  if (type == ParamType::bytes && bound >= 0 && bound < 18446744073709551616.0) {
    return exact_bytes(static_cast<std::uint64_t>(bound));
  }
  return fmt::format("{}", bound);
}

std::string ParamSpec::canonical(std::string_view value, std::string_view what) const {
  const auto within_bounds = [&](double v, std::string text) {
    if (v < minimum) {
      throw InputError(fmt::format("{}: '{}' is below the minimum {}", what, value, bound_text(minimum)));
    }
    if (v > maximum) {
      throw InputError(fmt::format("{}: '{}' is above the maximum {}", what, value, bound_text(maximum)));
    }
    return text;
  };
  switch (type) {
    case ParamType::integer: {
      if (const auto v = parse_number<std::int64_t>(value)) {
        return within_bounds(static_cast<double>(*v), std::to_string(*v));
      }
      // Digits beyond what 64 bits hold: out of range, not "not an integer".
      const std::string_view digits = !value.empty() && value.front() == '-' ? value.substr(1) : value;
      if (!digits.empty() &&
          std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        throw InputError(
            value.front() == '-'
                ? fmt::format("{}: '{}' is below the minimum {}", what, value, bound_text(minimum))
            : std::isfinite(maximum)
                ? fmt::format("{}: '{}' is above the maximum {}", what, value, bound_text(maximum))
                : fmt::format("{}: '{}' is too large for a 64-bit integer", what, value));
      }
      throw InputError(fmt::format("{}: '{}' is not an integer", what, value));
    }
    case ParamType::bytes: {
      const std::uint64_t v = parse_bytes(value, what);
      return within_bounds(static_cast<double>(v), exact_bytes(v));
    }
    case ParamType::real:
      if (const auto v = parse_number<double>(value)) {
        if (!std::isfinite(*v)) {
          throw InputError(fmt::format("{}: '{}' is not a finite number", what, value));
        }
        return within_bounds(*v, fmt::format("{}", *v));
      }
      throw InputError(fmt::format("{}: '{}' is not a number", what, value));
    case ParamType::boolean:
      if (value == "true" || value == "1" || value == "yes" || value == "on") {
        return "true";
      }
      if (value == "false" || value == "0" || value == "no" || value == "off") {
        return "false";
      }
      throw InputError(fmt::format("{}: '{}' is not true or false", what, value));
    case ParamType::choice:
      if (std::find(choices.begin(), choices.end(), value) != choices.end()) {
        return std::string(value);
      }
      throw InputError(fmt::format("{}: '{}' is not one of {}", what, value, fmt::join(choices, ", ")));
    case ParamType::text:
      if (value.empty()) {
        throw InputError(fmt::format("{}: empty value", what));
      }
      return std::string(value);
  }
  throw InputError(fmt::format("{}: unknown parameter type", what));
}

const std::string& ParamSet::text(std::string_view name) const {
  for (const auto& [key, value] : values_) {
    if (key == name) {
      return value;
    }
  }
  throw std::out_of_range(fmt::format("no parameter '{}' in this case", name));
}

std::int64_t ParamSet::integer(std::string_view name) const {
  return parse_number<std::int64_t>(text(name)).value();
}

std::uint64_t ParamSet::bytes(std::string_view name) const {
  return parse_bytes(text(name), name);
}

double ParamSet::real(std::string_view name) const {
  return parse_number<double>(text(name)).value();
}

bool ParamSet::boolean(std::string_view name) const {
  return text(name) == "true";
}

ParamOverride ParamOverride::parse(std::string_view text, std::string_view what) {
  const std::size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size()) {
    throw InputError(fmt::format("{} '{}': expected [WORKLOAD.]NAME=VALUE[,VALUE...]", what, text));
  }
  ParamOverride o;
  const std::string_view key = text.substr(0, eq);
  if (const std::size_t dot = key.find('.'); dot != std::string_view::npos) {
    o.workload = std::string(key.substr(0, dot));
    o.name = std::string(key.substr(dot + 1));
  } else {
    o.name = std::string(key);
  }
  o.values = split(text.substr(eq + 1), ',');
  const bool bad_key = o.name.empty() || o.name.find('.') != std::string::npos ||
                       (key.find('.') != std::string_view::npos && o.workload.empty());
  if (bad_key ||
      std::any_of(o.values.begin(), o.values.end(), [](const std::string& v) { return v.empty(); })) {
    throw InputError(
        fmt::format("{} '{}': expected [WORKLOAD.]NAME=VALUE[,VALUE...] with no empty value", what, text));
  }
  return o;
}

}  // namespace memstress
