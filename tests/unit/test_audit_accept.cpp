// The bad-input audit for acceptance profiles: golden values that judge
// nothing, unknown and duplicate keys, YAML aliases of the wrong kind named by key and line, training that
// never writes a profile that would not load, and checks whose cases were all skipped.

#include <gtest/gtest.h>

#include <string>

#include "harness/accept/judge.hpp"
#include "harness/accept/profile.hpp"
#include "harness/accept/train.hpp"
#include "harness/core/error.hpp"

namespace memstress {
namespace {

std::string error_of(const std::string& yaml) {
  try {
    static_cast<void>(parse_profile(yaml, "p.yaml", "--train"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

std::string with_check(const std::string& check) {
  return "name: x\ngpu: y\nruns: [{workload: smoke}]\nchecks:\n  - " + check + "\n";
}

TEST(AuditProfile, GoldenValuesThatJudgeNothingAreRefused) {
  for (const char* golden : {".nan", ".NaN", ".inf", "-.inf", "0", "0.0", "-3"}) {
    const std::string e =
        error_of(with_check(std::string("{name: c, workload: smoke, metric: fill, golden: ") + golden + "}"));
    EXPECT_NE(e.find("p.yaml: checks[0]"), std::string::npos) << golden << ": " << e;
    EXPECT_NE(e.find("golden"), std::string::npos) << golden << ": " << e;
  }
  EXPECT_NE(error_of(with_check("{name: c, workload: smoke, metric: fill, max: .nan}"))
                .find("`max` must be a finite number"),
            std::string::npos);
  EXPECT_EQ(error_of(with_check("{name: c, workload: smoke, metric: fill, golden: 1e-3}")), "no error");
  EXPECT_EQ(error_of(with_check("{name: c, workload: smoke, metric: fill, golden: null}")), "no error");
}

TEST(AuditProfile, UnknownKeysAreRefusedNamingThemAndTheirLine) {
  std::string e = error_of(with_check("{name: c, workload: smoke, metric: fill, golden: 1, factr: 0.9}"));
  EXPECT_NE(e.find("p.yaml: checks[0]: unknown key `factr` (line 5)"), std::string::npos) << e;
  e = error_of("name: x\ngpu: y\nrun: []\nruns: []\nchecks: []\n");
  EXPECT_NE(e.find("p.yaml: unknown key `run` (line 3)"), std::string::npos) << e;
  e = error_of("name: x\ngpu: y\nruns: [{workload: smoke, param: {bytes: 1M}}]\nchecks: []\n");
  EXPECT_NE(e.find("p.yaml: runs[0]: unknown key `param`"), std::string::npos) << e;
}

TEST(AuditProfile, DuplicateKeysAreRefusedNamingBothLines) {
  std::string e = error_of("name: x\ngpu: y\ngpu: z\nruns: []\nchecks: []\n");
  EXPECT_NE(e.find("p.yaml: key `gpu` is given twice (lines 2 and 3)"), std::string::npos) << e;
  e = error_of(
      "name: x\ngpu: y\nruns: []\nchecks:\n  - name: c\n    workload: smoke\n    metric: fill\n    min: 1\n"
      "    min: 2\n");
  EXPECT_NE(e.find("p.yaml: checks[0]: key `min` is given twice (lines 8 and 9)"), std::string::npos) << e;
  e = error_of(
      with_check("{name: c, workload: smoke, where: {bytes: 1G, bytes: 64M}, metric: fill, min: 1}"));
  EXPECT_NE(e.find("p.yaml: checks[0].where: key `bytes` is given twice"), std::string::npos) << e;
}

TEST(AuditProfile, AliasesOfTheWrongKindNameTheKeyAndLine) {
  // An alias to a map where a single value belongs: yaml-cpp's own message was "bad conversion".
  std::string e = error_of(
      "name: x\ngpu: y\nruns:\n  - workload: smoke\n    params: &p {bytes: 1G}\nchecks:\n"
      "  - {name: c, workload: smoke, where: {bytes: *p}, metric: fill, min: 1}\n");
  EXPECT_NE(e.find("p.yaml: checks[0].where: `bytes` must be a single value, not a map (line 5)"),
            std::string::npos)
      << e;
  e = error_of("name: &n {a: 1}\ngpu: y\nruns: []\nchecks: []\n");
  EXPECT_NE(e.find("p.yaml: `name` must be a single value, not a map (line 1)"), std::string::npos) << e;
  e = error_of("name: x\ngpu: y\nruns: [{workload: smoke, params: {bytes: [1, 2]}}]\nchecks: []\n");
  EXPECT_NE(e.find("p.yaml: runs[0].params: `bytes` must be a single value, not a list (line 3)"),
            std::string::npos)
      << e;
  // An alias to an anchor never defined: yaml-cpp names the line only; the line's text names the key.
  e = error_of("name: x\ngpu: *nowhere\nruns: []\nchecks: []\n");
  EXPECT_NE(e.find("p.yaml: not YAML"), std::string::npos) << e;
  EXPECT_NE(e.find("(line 2: `gpu: *nowhere`)"), std::string::npos) << e;  // the key, with yaml-cpp's words
  EXPECT_EQ(e.find("internal"), std::string::npos) << e;
}

ResultRow row(const char* workload, Verdict verdict, double value, std::string reason = {}) {
  ResultRow r;
  r.workload = workload;
  r.verdict = verdict;
  r.reason = std::move(reason);
  if (verdict != Verdict::skip) {
    MetricResult m;
    m.name = "fill";
    m.better = Better::higher;
    m.summary.median = value;
    r.metrics.push_back(std::move(m));
  }
  return r;
}

TEST(AuditProfile, TrainingNeverWritesAGoldenValueThatWouldNotLoad) {
  Profile p = parse_profile(with_check("{name: c, workload: smoke, metric: fill, golden: null}"), "p.yaml",
                            "--train");
  const std::vector<Untrained> untrained = train(p, {row("smoke", Verdict::pass, 0)});
  ASSERT_EQ(untrained.size(), 1U);
  EXPECT_EQ(untrained[0].check, "c");
  EXPECT_NE(untrained[0].why.find("measured 0"), std::string::npos) << untrained[0].why;
  EXPECT_FALSE(p.checks[0].golden);
  EXPECT_NO_THROW(static_cast<void>(parse_profile(to_yaml(p), "again.yaml", "--train")));
}

TEST(AuditProfile, ACheckWhoseCasesWereAllSkippedIsNotJudged) {
  const Profile p =
      parse_profile(with_check("{name: c, workload: smoke, metric: verdict, max: 0}"), "p.yaml", "--train");
  const CheckOutcome skipped = evaluate(
      p.checks[0], {row("smoke", Verdict::skip, 0, "needs a real GPU (running on the simulated device)"),
                    row("other", Verdict::pass, 1)});
  EXPECT_FALSE(skipped.pass);
  EXPECT_TRUE(skipped.skipped);
  EXPECT_TRUE(skipped.not_run);
  EXPECT_NE(skipped.detail.find("needs a real GPU"), std::string::npos) << skipped.detail;
  // One skipped row beside one that ran: judged (and a skipped verdict still counts against it).
  const CheckOutcome mixed =
      evaluate(p.checks[0], {row("smoke", Verdict::skip, 0, "needs 2 GPUs"), row("smoke", Verdict::pass, 1)});
  EXPECT_FALSE(mixed.skipped);
  EXPECT_FALSE(mixed.pass);
}

}  // namespace
}  // namespace memstress
