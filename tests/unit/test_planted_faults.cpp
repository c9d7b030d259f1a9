#include <gtest/gtest.h>

#include <string>

#include "harness/core/error.hpp"
#include "harness/core/planted_faults.hpp"

namespace memstress {
namespace {

TEST(PlantedFaults, ParsesStuckAndFlippedBitsAndPageableHostMemory) {
  const PlantedFaults f = parse_planted_faults("stuck:123:63:1,flip:0:0,pageable");
  ASSERT_EQ(f.bits.size(), 2U);
  EXPECT_EQ(f.bits[0].kind, BitFault::Kind::stuck);
  EXPECT_EQ(f.bits[0].word, 123U);
  EXPECT_EQ(f.bits[0].bit, 63U);
  EXPECT_TRUE(f.bits[0].value);
  EXPECT_EQ(f.bits[1].kind, BitFault::Kind::flip);
  EXPECT_EQ(f.bits[1].word, 0U);
  EXPECT_TRUE(f.pageable_host);
  EXPECT_TRUE(parse_planted_faults("").empty());
}

TEST(PlantedFaults, ParsesRefusedPeersOnePairEach) {
  const PlantedFaults f = parse_planted_faults("nopeer:0:2,nopeer:3:1");
  EXPECT_FALSE(f.empty());
  EXPECT_TRUE(f.refuses(0, 2));
  EXPECT_TRUE(f.refuses(3, 1));
  EXPECT_FALSE(f.refuses(2, 0));  // one direction only
  EXPECT_FALSE(f.refuses(1, 3));
}

TEST(PlantedFaults, BadTextNamesTheVariableAndTheItem) {
  const auto message = [](const std::string& text) {
    try {
      (void)parse_planted_faults(text);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("stuck:1:64:0"),
            "MEMSTRESS_PLANT_FAULT item 'stuck:1:64:0': BIT must be a whole number from 0 to 63");
  EXPECT_EQ(message("stuck:1:2:2"),
            "MEMSTRESS_PLANT_FAULT item 'stuck:1:2:2': VALUE must be a whole number from 0 to 1");
  EXPECT_EQ(message("stuck:1:2"), "MEMSTRESS_PLANT_FAULT item 'stuck:1:2': expected stuck:WORD:BIT:VALUE");
  EXPECT_EQ(
      message("flip:x:2"),
      "MEMSTRESS_PLANT_FAULT item 'flip:x:2': WORD must be a whole number from 0 to 18446744073709551615");
  EXPECT_EQ(message("pageable,"),
            "MEMSTRESS_PLANT_FAULT item '': unknown fault; expected stuck:WORD:BIT:VALUE, "
            "flip:WORD:BIT, pageable, nopeer:FROM:TO, after:SECONDS:KIND or hang");
  EXPECT_EQ(message("nopeer:1"), "MEMSTRESS_PLANT_FAULT item 'nopeer:1': expected nopeer:FROM:TO");
  EXPECT_EQ(message("nopeer:1:-2"),
            "MEMSTRESS_PLANT_FAULT item 'nopeer:1:-2': TO must be a whole number from 0 to 1023");
  EXPECT_EQ(message("ecc"),
            "MEMSTRESS_PLANT_FAULT item 'ecc': unknown fault; expected stuck:WORD:BIT:VALUE, "
            "flip:WORD:BIT, pageable, nopeer:FROM:TO, after:SECONDS:KIND or hang");
  EXPECT_EQ(message("after:5"),
            "MEMSTRESS_PLANT_FAULT item 'after:5': expected after:SECONDS:flip|slow|throttle|xid:CODE");
  EXPECT_EQ(message("after:5:melt"),
            "MEMSTRESS_PLANT_FAULT item 'after:5:melt': unknown burn fault 'melt'; expected "
            "flip, slow, throttle or xid:CODE");
  EXPECT_EQ(message("after:x:flip"),
            "MEMSTRESS_PLANT_FAULT item 'after:x:flip': SECONDS must be a whole number from 0 to 604800");
}

TEST(PlantedFaults, TimedFaultsOfABurn) {
  const PlantedFaults f = parse_planted_faults("after:60:flip,after:120:xid:79,after:0:throttle");
  ASSERT_EQ(f.timed.size(), 3U);
  EXPECT_EQ(f.timed[0], (TimedFault{TimedFault::Kind::flip, 60, 0}));
  EXPECT_EQ(f.timed[1], (TimedFault{TimedFault::Kind::xid, 120, 79}));
  EXPECT_EQ(f.timed[2].kind, TimedFault::Kind::throttle);
  EXPECT_FALSE(f.empty());
}

TEST(PlantedFaults, AHangOnItsOwnOrWithOthers) {
  EXPECT_TRUE(parse_planted_faults("hang").hang);
  const PlantedFaults f = parse_planted_faults("pageable,hang");
  EXPECT_TRUE(f.hang);
  EXPECT_TRUE(f.pageable_host);
  EXPECT_FALSE(parse_planted_faults("hang").empty());
  EXPECT_FALSE(parse_planted_faults("pageable").hang);
  EXPECT_THROW(static_cast<void>(parse_planted_faults("hang:5")), InputError);
}

// CI builds without fault hooks: nothing is planted, whatever the environment says.
TEST(PlantedFaults, OnlyAFaultHookBuildReadsTheEnvironment) {
  ::setenv("MEMSTRESS_PLANT_FAULT", "stuck:1:2:1", 1);  // NOLINT(concurrency-mt-unsafe): no threads here
  const PlantedFaults f = planted_faults();
  ::unsetenv("MEMSTRESS_PLANT_FAULT");  // NOLINT(concurrency-mt-unsafe)
  EXPECT_EQ(f.bits.size(), fault_hooks_built() ? 1U : 0U);
}

}  // namespace
}  // namespace memstress
