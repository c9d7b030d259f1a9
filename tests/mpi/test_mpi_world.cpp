// Label mpi: MpiWorld's collectives under mpirun (two ranks or more): rank, size and local rank, barrier
// (the sleeping one and the spinning one: neither lets a rank through before the last arrives), broadcast,
// all-gather, and gather of texts of any length (empty to several MiB), in rank order. Its own main
// (world_test_main.hpp).

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <thread>
#include <vector>

#include "harness/dist/dist_error.hpp"
#include "harness/dist/world.hpp"
#include "world_test_main.hpp"

namespace memstress {
namespace {

// What rank `r` sends in the gather test: lengths from 0 to several MiB, contents that name the rank.
std::string text_of(int r) {
  const std::size_t length = r == 0 ? 0 : static_cast<std::size_t>(r) * (3U << 20) + 7U;
  // Not braced: std::string{n, c} would be the two characters n and c.
  return std::string(length, static_cast<char>('a' + r % 26));  // NOLINT(modernize-return-braced-init-list)
}

void collectives(World& world) {
  ASSERT_GE(world.size(), 2) << "run under mpirun -np 2";
  EXPECT_GE(world.rank(), 0);
  EXPECT_LT(world.rank(), world.size());
  EXPECT_LT(world.local_rank(), world.local_size());
  EXPECT_LE(world.local_size(), world.size());
  world.barrier();

  // Rank 0 comes 200 ms late to each barrier: every other rank waits for it in both kinds.
  for (const bool spin : {false, true}) {
    const auto start = std::chrono::steady_clock::now();
    if (world.rank() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    if (spin) {
      world.spin_barrier();
    } else {
      world.barrier();
    }
    EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(190))
        << (spin ? "spin_barrier" : "barrier") << " let rank " << world.rank() << " through early";
  }

  std::vector<std::byte> bytes(64, std::byte{0});
  if (world.rank() == 0) {
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      bytes[i] = static_cast<std::byte>(i * 3);
    }
  }
  world.broadcast(bytes, 0);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    EXPECT_EQ(bytes[i], static_cast<std::byte>(i * 3)) << "byte " << i;
  }

  const std::vector<double> values = world.all_gather(0.5 + world.rank());
  ASSERT_EQ(values.size(), static_cast<std::size_t>(world.size()));
  for (int r = 0; r < world.size(); ++r) {
    EXPECT_EQ(values[static_cast<std::size_t>(r)], 0.5 + r);
  }

  const std::vector<std::string> texts = world.gather(text_of(world.rank()));
  if (world.rank() != 0) {
    EXPECT_TRUE(texts.empty());
  } else {
    EXPECT_EQ(texts.size(), static_cast<std::size_t>(world.size()));
    for (std::size_t r = 0; r < texts.size(); ++r) {
      EXPECT_EQ(texts[r], text_of(static_cast<int>(r))) << "rank " << r;
    }
  }
  world.barrier();

  // Ranks at different kinds of barrier (one left a case the others time): every rank throws at once, none
  // is released into a window the others never entered.
  const auto start = std::chrono::steady_clock::now();
  try {
    if (world.rank() == 1) {
      world.barrier();
    } else {
      world.spin_barrier();
    }
    ADD_FAILURE() << "rank " << world.rank() << " was released from barriers of different kinds";
  } catch (const DistError& e) {
    EXPECT_NE(std::string(e.what()).find("different steps"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  world.barrier();
}

}  // namespace
}  // namespace memstress

int main(int argc, char** argv) {
  return memstress::testing::run_world_test(argc, argv, "MpiWorld", "CollectivesAcrossRanks",
                                            memstress::collectives);
}
