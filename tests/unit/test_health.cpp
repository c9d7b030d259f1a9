// GPU health readings injected for the simulated device (harness/env/health.hpp): what a file gives is what
// the `health` workload reports, and a bad file is refused naming itself and what is wrong.

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "harness/core/error.hpp"
#include "harness/env/health.hpp"

namespace memstress {
namespace {

std::string refusal(const char* json) {
  try {
    static_cast<void>(injected_health_watch(json, "h.json"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Health, FigureNamesAreUniqueAndErrorsAreLowerIsBetter) {
  std::set<std::string_view> names;
  for (const HealthFigure& f : health_figures()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
  }
  const auto figure = [](std::string_view name) {
    const auto all = health_figures();
    return *std::find_if(all.begin(), all.end(), [&](const HealthFigure& f) { return f.name == name; });
  };
  EXPECT_TRUE(figure("ecc.volatile.uncorrected").lower_is_better);
  EXPECT_TRUE(figure("pcie.gen_below_max").lower_is_better);
  EXPECT_FALSE(figure("pcie.gen").lower_is_better);  // a fact, judged against its maximum
  // The units results record, the same in every version so that runs compare (accept words them:
  // profile.cpp).
  EXPECT_EQ(figure("pcie.gen_below_max").unit, "gen");
  EXPECT_EQ(figure("pcie.width_below_max").unit, "lanes");
}

TEST(Health, AnInjectedReadingGivesItsFiguresNotMeasuredAndXids) {
  const auto watch = injected_health_watch(
      R"({"figures": {"pcie.gen": 4, "ecc.volatile.uncorrected": 1},
          "not_measured": {"nvlink.errors": "no NVLink"}, "xid": [79, 13]})",
      "h.json");
  EXPECT_EQ(watch->unavailable(), "");
  const GpuHealth h = watch->read();
  // In the figures' order, whatever the file's; the XIDs counted into xid.events.
  ASSERT_EQ(h.figures.size(), 3U);
  EXPECT_EQ(h.figures[0], (std::pair<std::string, double>{"ecc.volatile.uncorrected", 1}));
  EXPECT_EQ(h.figures[1], (std::pair<std::string, double>{"xid.events", 2}));
  EXPECT_EQ(h.figures[2], (std::pair<std::string, double>{"pcie.gen", 4}));
  ASSERT_EQ(h.not_measured.size(), 1U);
  EXPECT_EQ(h.not_measured[0].second, "no NVLink");
  EXPECT_EQ(h.notes,
            (std::vector<std::string>{"xid.events: XID 79 during the run (GPU has fallen off the bus)",
                                      "xid.events: XID 13 during the run (graphics engine exception)"}));
  EXPECT_EQ(xid_note(1000), "xid.events: XID 1000 during the run");  // a code without a catalogued meaning
}

TEST(Health, BadInjectedReadingsAreRefusedNamingTheFile) {
  EXPECT_NE(refusal("{").find("h.json: not JSON"), std::string::npos) << refusal("{");
  EXPECT_NE(refusal("[]").find("h.json:"), std::string::npos);
  EXPECT_NE(refusal(R"({"figures": {"ecc.bogus": 1}})").find("h.json: figures: unknown figure `ecc.bogus`"),
            std::string::npos);
  EXPECT_NE(
      refusal(R"({"figures": {"pcie.gen": -1}})").find("figures.pcie.gen: must be a number of 0 or more"),
      std::string::npos);
  EXPECT_NE(refusal(R"({"figures": {"pcie.gen": "5"}})").find("h.json: field"), std::string::npos)
      << refusal(R"({"figures": {"pcie.gen": "5"}})");
  EXPECT_NE(refusal(R"({"figures": {}, "xid": [-1]})").find("h.json:"), std::string::npos);
  EXPECT_NE(refusal(R"({"figures": {}, "not_measured": {"x": "y"}})").find("unknown figure `x`"),
            std::string::npos);
  EXPECT_THROW(static_cast<void>(injected_health_watch(std::filesystem::path("/nonexistent.json"))),
               InputError);
}

}  // namespace
}  // namespace memstress
