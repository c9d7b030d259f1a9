#include <gtest/gtest.h>

#include "harness/core/error.hpp"
#include "harness/run/params.hpp"

namespace memstress {
namespace {

TEST(ParamSpec, CanonicalFormsMakeEqualCasesEqual) {
  const ParamSpec bytes{
      .name = "bytes", .type = ParamType::bytes, .defaults = {"64M"}, .minimum = 1, .help = ""};
  EXPECT_EQ(bytes.canonical("67108864", "-p bytes"), "64M");
  EXPECT_EQ(bytes.canonical("64M", "-p bytes"), "64M");
  // A size format_bytes cannot write exactly stays exact: it was "1.50G" (1610612736) and "1.15G" (no
  // whole size; fuzz/regressions/params/canonical-*.txt; "-p block=1GB" was "953.67M").
  EXPECT_EQ(bytes.canonical("1610612737", "-p bytes"), "1610612737B");
  EXPECT_EQ(bytes.canonical("1234567890", "-p bytes"), "1234567890B");
  EXPECT_EQ(bytes.canonical("1GB", "-p bytes"), "1000000000B");
  EXPECT_EQ(bytes.canonical("1.5G", "-p bytes"), "1536M");
  const ParamSpec flag{.name = "pin", .type = ParamType::boolean, .defaults = {"true"}, .help = ""};
  EXPECT_EQ(flag.canonical("yes", "-p pin"), "true");
  EXPECT_EQ(flag.canonical("0", "-p pin"), "false");
  const ParamSpec n{
      .name = "streams", .type = ParamType::integer, .defaults = {"1"}, .minimum = 1, .help = ""};
  EXPECT_EQ(n.canonical("8", "-p streams"), "8");
}

TEST(ParamSpec, RejectsWrongTypesAndOutOfRangeNamingTheFlag) {
  const ParamSpec n{
      .name = "streams", .type = ParamType::integer, .defaults = {"1"}, .minimum = 1, .help = ""};
  const ParamSpec choice{.name = "pattern",
                         .type = ParamType::choice,
                         .defaults = {"random"},
                         .choices = {"random", "ones"},
                         .help = ""};
  const ParamSpec flag{.name = "pin", .type = ParamType::boolean, .defaults = {"true"}, .help = ""};
  for (const auto& [spec, value] : std::vector<std::pair<ParamSpec, std::string>>{
           {n, "two"}, {n, "0"}, {n, "1.5"}, {choice, "zeros"}, {flag, "maybe"}}) {
    try {
      static_cast<void>(spec.canonical(value, "-p smoke.x"));
      ADD_FAILURE() << "accepted " << value;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("-p smoke.x"), std::string::npos) << e.what();
    }
  }
}

TEST(ParamOverride, ParsesScopedAndUnscoped) {
  const ParamOverride a = ParamOverride::parse("streams=1,2,4", "-p");
  EXPECT_EQ(a.workload, "");
  EXPECT_EQ(a.name, "streams");
  EXPECT_EQ(a.values, (std::vector<std::string>{"1", "2", "4"}));
  const ParamOverride b = ParamOverride::parse("smoke.bytes=1G", "-p");
  EXPECT_EQ(b.workload, "smoke");
  EXPECT_EQ(b.name, "bytes");
  EXPECT_EQ(b.values, (std::vector<std::string>{"1G"}));
}

TEST(ParamOverride, RejectsMalformed) {
  for (const char* bad : {"streams", "=1", "streams=", "a.b.c=1", "streams=1,,2", ".x=1"}) {
    EXPECT_THROW(ParamOverride::parse(bad, "-p"), InputError) << bad;
  }
}

TEST(ParamSet, TypedAccess) {
  const ParamSet set({{"bytes", "64M"}, {"count", "16"}, {"pin", "true"}, {"ratio", "0.5"}});
  EXPECT_EQ(set.bytes("bytes"), 64ULL << 20);
  EXPECT_EQ(set.integer("count"), 16);
  EXPECT_TRUE(set.boolean("pin"));
  EXPECT_DOUBLE_EQ(set.real("ratio"), 0.5);
  EXPECT_THROW(static_cast<void>(set.text("missing")), std::out_of_range);
}

}  // namespace
}  // namespace memstress
