// JSON input: the nesting bound every reader applies before parsing (Note [Bounded JSON input]), a key
// twice refused (Note [Duplicate keys]), a top-level array handed over element by element, and JsonField's
// typed reads, whose errors name the field.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/core/json_field.hpp"
#include "harness/core/json_input.hpp"

namespace memstress {
namespace {

std::string nested(std::size_t levels) {
  return std::string(levels, '[') + std::string(levels, ']');
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(JsonInput, NestingUpToTheLimitParsesAndDeeperIsRefusedWithItsPlace) {
  EXPECT_NO_THROW(static_cast<void>(parse_json_input(nested(kMaxJsonDepth))));
  EXPECT_EQ(error_of([] { static_cast<void>(parse_json_input(nested(kMaxJsonDepth + 1))); }),
            "nested more than 128 levels deep (line 1, column 129): refused");
  EXPECT_EQ(error_of([] { check_json_depth("{\n  \"a\": [[[1]]]\n}", 3); }),
            "nested more than 3 levels deep (line 2, column 10): refused");
  // 100,000 levels: refused before any value exists, so nothing recurses over it.
  EXPECT_THROW(static_cast<void>(parse_json_input(nested(100'000))), InputError);
  EXPECT_THROW(check_json_depth(std::string(100'000, '{')), InputError);  // not closed: refused all the same
}

TEST(JsonInput, BracketsInStringsDoNotCount) {
  const std::string brackets(1000, '[');
  EXPECT_EQ(parse_json_input("[\"" + brackets + "\"]")[0], brackets);
  EXPECT_NO_THROW(check_json_depth(R"(["\"[[[[", "\\", {"k[": "]}"}])", 2));
  EXPECT_THROW(check_json_depth(R"(["\\", [[1]]])", 2), InputError);  // the string ends at the second quote
}

TEST(JsonInput, NotJsonIsAnInputError) {
  EXPECT_NE(error_of([] { static_cast<void>(parse_json_input("{\"a\": ")); }).find("not JSON ("),
            std::string::npos);
  EXPECT_NE(error_of([] { static_cast<void>(parse_json_input("")); }).find("not JSON ("), std::string::npos);
  // A number beyond a double is nlohmann's out_of_range (406), not a parse_error: it got out as an internal
  // error (fuzz/regressions/json_input/number-overflow.json).
  EXPECT_NE(error_of([] { static_cast<void>(parse_json_input("[1.5e3040]")); }).find("number overflow"),
            std::string::npos);
  EXPECT_NE(error_of([] { static_cast<void>(parse_json_input("-1e400")); }).find("not JSON ("),
            std::string::npos);
}

TEST(JsonField, ReadsEachTypeAndNamesTheFieldOfAWrongOne) {
  const nlohmann::json doc = nlohmann::json::parse(R"({
    "s": "text", "b": true, "n": 1.5, "i": -3, "u": 7, "z": null,
    "o": {"inner": {"x": [1, "two", null]}}
  })");
  const JsonField root(doc);
  EXPECT_EQ(root["s"].string(), "text");
  EXPECT_TRUE(root["b"].boolean());
  EXPECT_EQ(root["n"].real(), 1.5);
  EXPECT_TRUE(std::isnan(root["z"].real()));
  EXPECT_EQ(root["i"].integer(-5, 5), -3);
  EXPECT_EQ(root["u"].integer(0, 10), 7);
  EXPECT_EQ(root["u"].count(), 7U);
  EXPECT_EQ(root.string_or("absent", "default"), "default");
  EXPECT_FALSE(root.boolean_or("absent", false));
  EXPECT_FALSE(root.find("absent"));
  const std::vector<JsonField> x = root["o"]["inner"]["x"].elements();
  ASSERT_EQ(x.size(), 3U);
  EXPECT_EQ(x[1].path(), "o.inner.x[1]");
  EXPECT_EQ(error_of([&] { static_cast<void>(x[1].real()); }),
            "field o.inner.x[1]: expected a number, found a string (\"two\")");
  EXPECT_EQ(error_of([&] { static_cast<void>(root["o"]["inner"]["y"]); }), "field o.inner.y: missing");
  EXPECT_EQ(error_of([&] { static_cast<void>(root["s"]["k"]); }),
            "field s: expected an object, found a string (\"text\")");
  EXPECT_EQ(error_of([&] { static_cast<void>(root["o"].string()); }),
            "field o: expected a string, found an object");
  EXPECT_EQ(error_of([&] { static_cast<void>(root["i"].count()); }),
            "field i: expected a whole number, 0 or more, found a number (-3)");
  EXPECT_EQ(error_of([&] { static_cast<void>(root["u"].integer(0, 5)); }),
            "field u: expected a whole number from 0 to 5, found a number (7)");
  EXPECT_EQ(error_of([&] { static_cast<void>(root["n"].integer(0, 5)); }),
            "field n: expected a whole number from 0 to 5, found a number (1.5)");
  // A range below zero, or above it, against a non-negative value (nlohmann::json holds those unsigned): the
  // snapshot_facts fuzz target's second finding (an allocation at site 1 of a file with no sites).
  EXPECT_EQ(error_of([&] { static_cast<void>(root["u"].integer(-2, -1)); }),
            "field u: expected a whole number from -2 to -1, found a number (7)");
  EXPECT_EQ(error_of([&] { static_cast<void>(root["u"].integer(8, 10)); }),
            "field u: expected a whole number from 8 to 10, found a number (7)");
  EXPECT_EQ(root["i"].integer(-3, -3), -3);
  EXPECT_EQ(error_of([&] { static_cast<void>(root.string_or("b", "")); }),
            "field b: expected a string, found a boolean (true)");
  EXPECT_EQ(error_of([&] { static_cast<void>(root.elements()); }), "expected an array, found an object");
  const nlohmann::json long_string = std::string(100, 'x');
  EXPECT_EQ(error_of([&] { static_cast<void>(JsonField(long_string, "f").real()); }),
            "field f: expected a number, found a string (\"" + std::string(39, 'x') + "...)");
}

TEST(JsonInput, AKeyTwiceInOneObjectIsRefusedNamingItAndWhereItIs) {
  EXPECT_EQ(
      error_of([] { static_cast<void>(parse_json_input(R"({"rows": [1], "schema": "x", "rows": []})")); }),
      "key \"rows\" twice in one object (at /): which one is meant is unknown");
  EXPECT_EQ(
      error_of([] { static_cast<void>(parse_json_input(R"({"a": [{"b": 1}, {"c": {"d": 1, "d": 2}}]})")); }),
      "key \"d\" twice in one object (at /a/1/c): which one is meant is unknown");
  // The same key in different objects, and many keys in one object, are fine (and fast: a hash set past 16).
  EXPECT_EQ(parse_json_input(R"({"a": {"k": 1}, "b": {"k": 2}, "k": 3})").at("b").at("k"), 2);
  std::string many = "{";
  for (int i = 0; i < 100'000; ++i) {
    many += (i == 0 ? "\"" : ",\"") + std::to_string(i) + "\":" + std::to_string(i);
  }
  EXPECT_EQ(parse_json_input(many + "}").size(), 100'000U);
  EXPECT_EQ(error_of([&] { static_cast<void>(parse_json_input(many + ",\"99999\":0}")); }),
            "key \"99999\" twice in one object (at /): which one is meant is unknown");
  // A stream's lines: not JSON is a discarded value, a key twice still an error.
  EXPECT_TRUE(parse_json_line("{\"a\": ").is_discarded());
  EXPECT_EQ(error_of([] { static_cast<void>(parse_json_line(R"({"type": "row", "type": "header"})")); }),
            "key \"type\" twice in one object (at /): which one is meant is unknown");
}

TEST(JsonInput, AStreamedArrayIsHandedOverElementByElementAndNotKept) {
  std::vector<std::pair<std::size_t, nlohmann::json>> seen;
  const StreamedArray rows{"rows",
                           [&](nlohmann::json&& e, std::size_t i) { seen.emplace_back(i, std::move(e)); }};
  const nlohmann::json doc =
      parse_json_input(R"({"a": {"rows": [9]}, "rows": [{"x": [1, 2]}, 3, [4], null], "z": 1})", &rows);
  ASSERT_EQ(seen.size(), 4U);
  EXPECT_EQ(seen[0].first, 0U);
  EXPECT_EQ(seen[0].second, nlohmann::json::parse(R"({"x": [1, 2]})"));
  EXPECT_EQ(seen[1].second, 3);
  EXPECT_EQ(seen[2].second, nlohmann::json::parse("[4]"));
  EXPECT_EQ(seen[3].first, 3U);
  EXPECT_TRUE(seen[3].second.is_null());
  // Only the top-level member is streamed; the rest of the document is as parsed.
  EXPECT_EQ(doc, nlohmann::json::parse(R"({"a": {"rows": [9]}, "rows": [], "z": 1})"));
  seen.clear();
  EXPECT_EQ(parse_json_input("[1, 2]", &rows), nlohmann::json::parse("[1, 2]"));
  EXPECT_TRUE(seen.empty());
}

}  // namespace
}  // namespace memstress
