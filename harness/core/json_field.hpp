#pragma once

// Reading a JSON input field by field, every type checked. A JsonField is a value of a parsed input
// (parse_json_input) with the path that names it in messages: "params.bytes", "metrics.GB/s.median",
// "benchmarks[3].run_type". Each accessor checks what it reads and throws InputError naming the path and
// what it found ("field params.bytes: expected a string, found a number (64)"); the caller adds the file
// and the row. So a results file with a wrong type is bad input (exit 2) and never an nlohmann type_error
// ("internal error", exit 1). A JsonField refers to the value: the parsed document must outlive it.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memstress {

class JsonField {
 public:
  // `path` names the value itself; "" for the root of what the caller names (a row, a document).
  explicit JsonField(const nlohmann::json& value, std::string path = {})
      : value_(&value), path_(std::move(path)) {}

  [[nodiscard]] const nlohmann::json& json() const noexcept { return *value_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] bool is_null() const noexcept { return value_->is_null(); }

  // A member of an object: required (missing: "field P.key: missing"), or optional (absent: nullopt).
  [[nodiscard]] JsonField operator[](std::string_view key) const;
  [[nodiscard]] std::optional<JsonField> find(std::string_view key) const;
  // The members of an object, in its order (by name), and the elements of an array.
  [[nodiscard]] std::vector<std::pair<std::string, JsonField>> members() const;
  [[nodiscard]] std::vector<JsonField> elements() const;

  [[nodiscard]] std::string string() const;
  [[nodiscard]] bool boolean() const;
  // A number; null reads as NaN (nlohmann::json writes NaN and the infinities as null).
  [[nodiscard]] double real() const;
  // A whole number from `min` to `max`.
  [[nodiscard]] std::int64_t integer(std::int64_t min, std::int64_t max) const;
  // A whole number, 0 or more (counts of items, of bytes).
  [[nodiscard]] std::uint64_t count() const;

  // An optional member of the expected type, or `fallback` where it is absent.
  [[nodiscard]] std::string string_or(std::string_view key, std::string fallback) const;
  [[nodiscard]] bool boolean_or(std::string_view key, bool fallback) const;

  // Throws InputError: "field P: expected W, found T (V)" ("the document: ..." where P is "").
  [[noreturn]] void wrong_type(std::string_view wanted) const;

 private:
  void expect(nlohmann::json::value_t type, std::string_view wanted) const;
  [[nodiscard]] std::string child(std::string_view key) const;

  const nlohmann::json* value_;
  std::string path_;
};

}  // namespace memstress
