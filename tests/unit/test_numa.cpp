#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "harness/core/error.hpp"
#include "harness/memory/numa.hpp"

namespace memstress {
namespace {

TEST(Numa, ModeReadsLocalAndOffAndNamesTheFlagOtherwise) {
  EXPECT_EQ(parse_numa_mode("local", "--numa"), NumaMode::local);
  EXPECT_EQ(parse_numa_mode("off", "--numa"), NumaMode::off);
  try {
    static_cast<void>(parse_numa_mode("near", "--numa"));
    FAIL() << "near was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--numa near"), std::string::npos) << e.what();
  }
}

TEST(Numa, PlacementIsRecordedWithItsReason) {
  NumaPlacement placement;
  placement.gpu_nodes = {1};
  placement.cpus = "0-7";
  placement.cpu_nodes = {0};
  placement.note = "why";
  const nlohmann::json j = to_json(placement);
  EXPECT_EQ(j.at("mode"), "local");
  EXPECT_EQ(j.at("gpu_nodes"), nlohmann::json::array({1}));
  EXPECT_EQ(j.at("memory_placed"), false);
  EXPECT_EQ(j.at("cpus"), "0-7");
  EXPECT_EQ(j.at("note"), "why");
  EXPECT_FALSE(to_json(NumaPlacement{}).contains("note"));
}

struct FreeAligned {
  void operator()(void* p) const noexcept { std::free(p); }  // NOLINT(cppcoreguidelines-no-malloc)
};

TEST(Numa, TouchedPagesAreOnOneNodeAndNothingIsNowhere) {
  constexpr std::size_t kBytes = std::size_t{4} << 20U;
  const std::unique_ptr<void, FreeAligned> buffer(std::aligned_alloc(4096, kBytes));  // NOLINT
  ASSERT_NE(buffer, nullptr);
  std::memset(buffer.get(), 1, kBytes);
  const HostTopology host;
  const std::optional<int> node = host.node_of(buffer.get(), kBytes);
#ifdef MEMSTRESS_HAVE_HWLOC
  ASSERT_TRUE(node.has_value()) << "hwloc could not say where touched pages lie";
  EXPECT_GE(*node, 0);
#else
  EXPECT_FALSE(node.has_value());
#endif
  EXPECT_FALSE(host.node_of(nullptr, kBytes).has_value());
  EXPECT_FALSE(host.node_of(buffer.get(), 0).has_value());
}

}  // namespace
}  // namespace memstress
