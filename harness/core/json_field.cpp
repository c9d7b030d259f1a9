#include "harness/core/json_field.hpp"

#include <fmt/format.h>

#include <limits>

#include "harness/core/error.hpp"
#include "harness/core/json_text.hpp"

namespace memstress {
namespace {

using value_t = nlohmann::json::value_t;

// What a value is, for a message: "a number (64)", "a string (\"fast\")", "an array".
std::string found(const nlohmann::json& v) {
  constexpr std::size_t kShown = 40;
  const auto shown = [&](const std::string& text) {
    return text.size() > kShown ? text.substr(0, kShown) + "..." : text;
  };
  switch (v.type()) {
    case value_t::object:
      return "an object";
    case value_t::array:
      return "an array";
    case value_t::string:
      return fmt::format("a string ({})", shown(json_text(v)));
    case value_t::boolean:
      return fmt::format("a boolean ({})", v.get<bool>());
    case value_t::number_integer:
    case value_t::number_unsigned:
    case value_t::number_float:
      return fmt::format("a number ({})", shown(json_text(v)));
    case value_t::null:
      return "null";
    case value_t::binary:
    case value_t::discarded:
      break;
  }
  return "nothing readable";
}

std::string field_name(const std::string& path) {
  return path.empty() ? std::string() : fmt::format("field {}: ", path);
}

}  // namespace

void JsonField::wrong_type(std::string_view wanted) const {
  throw InputError(fmt::format("{}expected {}, found {}", field_name(path_), wanted, found(*value_)));
}

void JsonField::expect(value_t type, std::string_view wanted) const {
  if (value_->type() != type) {
    wrong_type(wanted);
  }
}

std::string JsonField::child(std::string_view key) const {
  return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
}

JsonField JsonField::operator[](std::string_view key) const {
  std::optional<JsonField> member = find(key);
  if (!member) {
    throw InputError(fmt::format("field {}: missing", child(key)));
  }
  return *member;
}

std::optional<JsonField> JsonField::find(std::string_view key) const {
  expect(value_t::object, "an object");
  const auto it = value_->find(key);
  if (it == value_->end()) {
    return std::nullopt;
  }
  return JsonField(*it, child(key));
}

std::vector<std::pair<std::string, JsonField>> JsonField::members() const {
  expect(value_t::object, "an object");
  std::vector<std::pair<std::string, JsonField>> out;
  out.reserve(value_->size());
  for (const auto& [key, value] : value_->items()) {
    out.emplace_back(key, JsonField(value, child(key)));
  }
  return out;
}

std::vector<JsonField> JsonField::elements() const {
  expect(value_t::array, "an array");
  std::vector<JsonField> out;
  out.reserve(value_->size());
  for (std::size_t i = 0; i < value_->size(); ++i) {
    out.emplace_back((*value_)[i], fmt::format("{}[{}]", path_, i));
  }
  return out;
}

std::string JsonField::string() const {
  expect(value_t::string, "a string");
  return value_->get<std::string>();
}

bool JsonField::boolean() const {
  expect(value_t::boolean, "true or false");
  return value_->get<bool>();
}

double JsonField::real() const {
  if (value_->is_null()) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (!value_->is_number()) {
    wrong_type("a number");
  }
  return value_->get<double>();
}

std::int64_t JsonField::integer(std::int64_t min, std::int64_t max) const {
  const std::string wanted = fmt::format("a whole number from {} to {}", min, max);
  if (value_->is_number_unsigned()) {
    // nlohmann::json parses every non-negative integer as unsigned: compared as such only where max >= 0 (a
    // negative max, cast, would let every value through), and against min too.
    const auto v = value_->get<std::uint64_t>();
    if (max < 0 || v > static_cast<std::uint64_t>(max) || (min > 0 && v < static_cast<std::uint64_t>(min))) {
      wrong_type(wanted);
    }
    return static_cast<std::int64_t>(v);
  }
  if (!value_->is_number_integer()) {
    wrong_type(wanted);
  }
  const auto v = value_->get<std::int64_t>();
  if (v < min || v > max) {
    wrong_type(wanted);
  }
  return v;
}

std::uint64_t JsonField::count() const {
  if (!value_->is_number_unsigned()) {  // nlohmann::json parses every non-negative integer as unsigned
    wrong_type("a whole number, 0 or more");
  }
  return value_->get<std::uint64_t>();
}

std::string JsonField::string_or(std::string_view key, std::string fallback) const {
  const std::optional<JsonField> member = find(key);
  return member ? member->string() : std::move(fallback);
}

bool JsonField::boolean_or(std::string_view key, bool fallback) const {
  const std::optional<JsonField> member = find(key);
  return member ? member->boolean() : fallback;
}

}  // namespace memstress
