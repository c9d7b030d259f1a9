// The bad-input audit of values: sizes run exactly as asked (never rounded through a
// display label), sweeps with fractional factors, bounds on every integer axis, and values refused when
// the plan is made (exit 2) rather than as error rows at run time.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "apps/flag_names.hpp"
#include "harness/core/error.hpp"
#include "harness/core/units.hpp"
#include "harness/memory/sim_backend.hpp"
#include "harness/run/plan.hpp"
#include "harness/run/registry.hpp"
#include "harness/run/workload.hpp"
#include "suites/registry.hpp"

namespace memstress {
namespace {

// The sweep's and the plan's inputs named as `memstress run` names them (apps/flag_names.hpp).
const SizeSweepNames kSweepFlags = app::run_sweep_names();
const PlanInputNames kRunNames = app::run_plan_names();

// The message of the InputError that plan_cases throws for `request`, or "no error".
std::string plan_error(const PlanRequest& request) {
  try {
    static_cast<void>(plan_cases(suites::builtin_registry(), request));
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

PlanRequest one(std::string workload, std::vector<std::string> params) {
  PlanRequest r;
  r.names = kRunNames;
  r.workloads = {std::move(workload)};
  for (const std::string& p : params) {
    r.overrides.push_back(ParamOverride::parse(p, "-p"));
  }
  return r;
}

TEST(AuditExactBytes, IsExactForEveryValue) {
  EXPECT_EQ(exact_bytes(0), "0B");
  EXPECT_EQ(exact_bytes(64ULL << 20), "64M");
  EXPECT_EQ(exact_bytes(1536ULL << 20), "1536M");
  EXPECT_EQ(exact_bytes(1'050'000), "1050000B");
  EXPECT_EQ(exact_bytes(1'048'577), "1048577B");
  EXPECT_EQ(exact_bytes((1ULL << 20) * 1025 + 1024), "1049601K");
  const std::vector<std::uint64_t> values{
      1,           1'050'000,  1'048'577,        1'153'433,
      123'456'789, 3ULL << 40, (1ULL << 50) + 1, std::numeric_limits<std::uint64_t>::max() / 2};
  for (const std::uint64_t v : values) {
    EXPECT_EQ(parse_bytes(exact_bytes(v), "x"), v) << exact_bytes(v);
  }
}

TEST(AuditParseBytes, EverySizeIsTheSizeWritten) {
  EXPECT_EQ(parse_bytes("9007199254740993", "x"), 9'007'199'254'740'993ULL);  // 2^53 + 1: not ...992
  EXPECT_EQ(parse_bytes("18446744073709551615", "x"), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(parse_bytes("1.5G", "x"), 3ULL << 29);
  EXPECT_EQ(parse_bytes("0.5K", "x"), 512U);
  EXPECT_EQ(parse_bytes(".5K", "x"), 512U);
  EXPECT_EQ(parse_bytes("1.50000000000000000000000000000K", "x"), 1536U);
  EXPECT_EQ(parse_bytes("0.00000095367431640625T", "x"), 1ULL << 20);  // 2^-20 TiB
  EXPECT_EQ(parse_bytes("15.5T", "x"), 31ULL << 39);
  for (const char* bad : {"18446744073709551616", "16777216T", "99999999999999999999999", ".", "1.2.3",
                          "0.3K", "1.0000000000000000000000001K"}) {
    EXPECT_THROW(static_cast<void>(parse_bytes(bad, "x")), InputError) << bad;
  }
}

TEST(AuditSimDevice, ARequestOfTwoToTheSixtyFourMinusOneBytesNeverFits) {
  SimBackend device(8ULL << 30);
  for (const std::uint64_t bytes :
       {std::numeric_limits<std::uint64_t>::max(), std::numeric_limits<std::uint64_t>::max() - 100,
        (std::numeric_limits<std::uint64_t>::max() / 2) + 1}) {
    EXPECT_EQ(device.try_reserve(bytes), nullptr) << bytes;  // rounding up wrapped to 0 bytes, which "fitted"
    EXPECT_THROW(static_cast<void>(device.reserve_address_range(bytes)), OutOfMemoryError) << bytes;
  }
  EXPECT_EQ(device.mem_info().free, 8ULL << 30);
}

TEST(AuditSizes, ACaseRunsExactlyTheBytesAsked) {
  const std::vector<PlannedCase> cases =
      plan_cases(suites::builtin_registry(), one("alloc-smoke", {"bytes=1050000"}));
  ASSERT_EQ(cases.size(), 1U);
  EXPECT_EQ(cases[0].params.bytes("bytes"), 1'050'000U);
  EXPECT_EQ(cases[0].params.text("bytes"), "1050000B");
}

TEST(AuditSizes, MinbytesMaxbytesOfAnOddSizeRunThatSize) {
  PlanRequest r = one("alloc-smoke", {});
  r.sizes = size_sweep(1'048'577, 1'048'577, 2.0, 0, kSweepFlags);
  const std::vector<PlannedCase> cases = plan_cases(suites::builtin_registry(), r);
  ASSERT_EQ(cases.size(), 1U);
  EXPECT_EQ(cases[0].params.bytes("bytes"), 1'048'577U);
}

TEST(AuditSizes, AFractionalFactorGivesWholeStrictlyIncreasingSizes) {
  EXPECT_EQ(size_sweep(1000, 1400, 1.1, 0, kSweepFlags),
            (std::vector<std::uint64_t>{1000, 1100, 1210, 1331}));
  EXPECT_EQ(size_sweep(1, 9, 1.5, 0, kSweepFlags), (std::vector<std::uint64_t>{1, 2, 3, 4, 6, 9}));
  EXPECT_EQ(size_sweep(100, 115, 1.15, 0, kSweepFlags), (std::vector<std::uint64_t>{100, 115}));  // not 114
  const std::vector<std::uint64_t> barely = size_sweep(10, 15, 1.000001, 0, kSweepFlags);
  EXPECT_EQ(barely, (std::vector<std::uint64_t>{10, 11, 12, 13, 14, 15}));
  // -b 1M -e 2M -f 1.1 plans (it failed blaming `-p alloc-smoke.bytes: '1.10M'`), each step exact.
  PlanRequest r = one("alloc-smoke", {});
  r.sizes = size_sweep(1ULL << 20, 2ULL << 20, 1.1, 0, kSweepFlags);
  const std::vector<PlannedCase> cases = plan_cases(suites::builtin_registry(), r);
  ASSERT_EQ(cases.size(), r.sizes->size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(cases[i].params.bytes("bytes"), (*r.sizes)[i]);
    if (i > 0) {
      EXPECT_GT((*r.sizes)[i], (*r.sizes)[i - 1]);
    }
  }
  EXPECT_EQ((*r.sizes)[1], 1'153'433U);  // floor(1048576 x 1.1)
}

TEST(AuditSizes, SweepsNearTheTopOfTheRangeEnd) {
  const std::uint64_t top = std::numeric_limits<std::uint64_t>::max();
  EXPECT_EQ(size_sweep(top - 1, top, 2.0, 0, kSweepFlags), (std::vector<std::uint64_t>{top - 1}));
  EXPECT_EQ(size_sweep(top - 1, top, 2.0, 1, kSweepFlags), (std::vector<std::uint64_t>{top - 1, top}));
  EXPECT_EQ(size_sweep(1, 4, 1e300, 0, kSweepFlags), (std::vector<std::uint64_t>{1}));
}

TEST(AuditSizes, NonFiniteFactorsAreRefusedNamingTheFlag) {
  for (const double factor :
       {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN(), 1.0, 0.5, -2.0}) {
    try {
      static_cast<void>(size_sweep(1, 1024, factor, 0, kSweepFlags));
      ADD_FAILURE() << "accepted -f " << factor;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("-f/--stepfactor"), std::string::npos) << e.what();
    }
  }
}

TEST(AuditSizes, ASweepOutsideAnAxisBoundsNamesTheSweepNotMinusP) {
  PlanRequest r = one("smoke", {});
  r.sizes = size_sweep(1, 64, 2.0, 0, kSweepFlags);  // smoke's bytes are at least 16
  const std::string e = plan_error(r);
  EXPECT_NE(e.find("-b/-e/-f"), std::string::npos) << e;
  EXPECT_NE(e.find("below the minimum 16B"), std::string::npos) << e;
  EXPECT_EQ(e.find("-p smoke.bytes"), std::string::npos) << e;
}

TEST(AuditAxes, EveryIntegerAxisHasAFiniteMaximum) {
  const Registry registry = suites::builtin_registry();
  for (const auto& w : registry.all()) {
    for (const ParamSpec& spec : w->params()) {
      if (spec.type == ParamType::integer) {
        EXPECT_TRUE(std::isfinite(spec.maximum)) << w->name() << "." << spec.name;
        EXPECT_LE(spec.maximum, 1e9) << w->name() << "." << spec.name;
      }
      for (const std::string& v : spec.defaults) {
        EXPECT_NO_THROW(static_cast<void>(spec.canonical(v, "default"))) << w->name() << "." << spec.name;
      }
      for (const std::string& v : spec.full_defaults) {
        EXPECT_NO_THROW(static_cast<void>(spec.canonical(v, "default"))) << w->name() << "." << spec.name;
      }
    }
  }
}

TEST(AuditAxes, ValuesAboveAnIntegerAxisMaximumNameTheAxisAndTheMaximum) {
  struct Case {
    const char* workload;
    const char* param;
    const char* says;
  };
  for (const Case& c :
       {Case{"alloc-smoke", "count=2147483648",
             "-p alloc-smoke.count: '2147483648' is above the maximum 1000000"},
        Case{"sizes", "ops=4294967297", "-p sizes.ops: '4294967297' is above the maximum 10000000"},
        Case{"streams", "ops=4294967297", "-p streams.ops: '4294967297' is above the maximum 1000000"},
        Case{"leak", "epochs=4294967297", "-p leak.epochs: '4294967297' is above the maximum 10000"},
        Case{"streams", "streams=33", "-p streams.streams: '33' is above the maximum 32"},
        Case{"alloc-smoke", "count=99999999999999999999999", "is above the maximum 1000000"},
        Case{"alloc-smoke", "count=-99999999999999999999999", "is below the minimum 1"}}) {
    const std::string e = plan_error(one(c.workload, {c.param}));
    EXPECT_NE(e.find(c.says), std::string::npos) << c.param << ": " << e;
  }
}

TEST(AuditAxes, NumberAxesRefuseNanAndInfinity) {
  for (const char* p : {"alloc_prob=nan", "alloc_prob=inf", "alloc_prob=-inf", "alloc_prob=NAN"}) {
    const std::string e = plan_error(one("sizes", {p}));
    EXPECT_NE(e.find("-p sizes.alloc_prob"), std::string::npos) << p << ": " << e;
    EXPECT_NE(e.find("not a finite number"), std::string::npos) << p << ": " << e;
  }
  const std::string e = plan_error(one("leak", {"retained=nan"}));
  EXPECT_NE(e.find("-p leak.retained: 'nan' is not a finite number"), std::string::npos) << e;
}

TEST(AuditAxes, OutOfRangeValuesAreRefusedWhenThePlanIsMade) {
  EXPECT_NE(
      plan_error(one("sizes", {"alloc_prob=2"})).find("-p sizes.alloc_prob: '2' is above the maximum 1"),
      std::string::npos);
  EXPECT_NE(plan_error(one("leak", {"retained=1.5"})).find("-p leak.retained: '1.5' is above the maximum 1"),
            std::string::npos);
  const std::string e = plan_error(one("sizes", {"min_bytes=1M", "max_bytes=512K"}));
  EXPECT_NE(e.find("-p sizes: min_bytes (1M) must be at least 1 and at most max_bytes (512K)"),
            std::string::npos)
      << e;
  const std::string pow2 = plan_error(one("sizes", {"dist=pow2", "min_bytes=3", "max_bytes=3"}));
  EXPECT_NE(pow2.find("-p sizes: dist=pow2: no power of two"), std::string::npos) << pow2;
  EXPECT_EQ(plan_error(one("sizes", {"min_bytes=1M", "max_bytes=1M"})), "no error");
}

}  // namespace
}  // namespace memstress
