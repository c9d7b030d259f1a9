#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "harness/memory/device_spec.hpp"
#include "harness/memory/sim_backend.hpp"

namespace memstress {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;
constexpr std::uint64_t kGiB = 1ULL << 30;

std::uintptr_t addr(void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

TEST(SimBackend, ChargesLikeTheDriver) {
  EXPECT_EQ(SimBackend::charged_bytes(1), 512U);
  EXPECT_EQ(SimBackend::charged_bytes(513), 1024U);
  EXPECT_EQ(SimBackend::charged_bytes(kMiB), kMiB);
  EXPECT_EQ(SimBackend::charged_bytes(kMiB + 1), 2 * kMiB);
  EXPECT_EQ(SimBackend::charged_bytes(20 * kMiB + 1), 22 * kMiB);
}

TEST(SimBackend, AccountsAndReleases) {
  SimBackend dev(8 * kGiB);
  EXPECT_FALSE(dev.has_memory());
  EXPECT_EQ(dev.info().label(), "sim:8G");
  EXPECT_EQ(dev.mem_info().free, 8 * kGiB);
  void* a = dev.try_reserve(kGiB);
  void* b = dev.try_reserve(3 * kMiB);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(dev.mem_info().free, 8 * kGiB - kGiB - 4 * kMiB);
  EXPECT_TRUE(addr(a) + kGiB <= addr(b) || addr(b) + 4 * kMiB <= addr(a));
  dev.release(a, kGiB);
  dev.release(b, 3 * kMiB);
  EXPECT_EQ(dev.mem_info().free, 8 * kGiB);
}

TEST(SimBackend, OutOfMemoryIsNullNotAThrow) {
  SimBackend dev(4 * kGiB);
  void* a = dev.try_reserve(3 * kGiB);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(dev.try_reserve(2 * kGiB), nullptr);
  void* b = dev.try_reserve(kGiB);  // exactly what is left
  EXPECT_NE(b, nullptr);
  EXPECT_EQ(dev.mem_info().free, 0U);
  dev.release(a, 3 * kGiB);
  dev.release(b, kGiB);
}

TEST(SimBackend, CapacityNotAddressesLimitsAllocations) {
  // Interleaved frees leave address holes; the driver maps pages anywhere, so only capacity counts.
  SimBackend dev(64 * kMiB);
  std::vector<void*> blocks;
  for (int i = 0; i < 32; ++i) {
    blocks.push_back(dev.try_reserve(2 * kMiB));
    ASSERT_NE(blocks.back(), nullptr);
  }
  for (std::size_t i = 0; i < blocks.size(); i += 2) {
    dev.release(blocks[i], 2 * kMiB);
  }
  void* big = dev.try_reserve(32 * kMiB);
  EXPECT_NE(big, nullptr);
}

TEST(SimBackend, DeterministicAddresses) {
  const auto sequence = [] {
    SimBackend dev(kGiB);
    std::vector<std::uintptr_t> out;
    void* a = dev.try_reserve(5 * kMiB);
    void* b = dev.try_reserve(700);
    dev.release(a, 5 * kMiB);
    void* c = dev.try_reserve(kMiB);
    for (void* p : {a, b, c}) {
      out.push_back(addr(p));
    }
    return out;
  };
  EXPECT_EQ(sequence(), sequence());
  EXPECT_EQ(sequence().front(), SimBackend::kBaseAddress);
}

TEST(SimBackend, ReleaseCoalescesSoAddressSpaceIsReused) {
  SimBackend dev(kGiB);
  for (int round = 0; round < 10000; ++round) {
    void* p = dev.try_reserve(kGiB);
    ASSERT_NE(p, nullptr) << "round " << round;
    dev.release(p, kGiB);
  }
}

TEST(DeviceSpec, Parses) {
  EXPECT_EQ(DeviceSpec::parse("auto", "--device").kind, DeviceSpec::Kind::automatic);
  const DeviceSpec sim = DeviceSpec::parse("sim:40GB", "--device");
  EXPECT_EQ(sim.kind, DeviceSpec::Kind::sim);
  EXPECT_EQ(sim.sim_capacity, 40'000'000'000ULL);
  EXPECT_EQ(DeviceSpec::parse("sim", "--device").sim_capacity, 80 * kGiB);
  EXPECT_EQ(DeviceSpec::parse("cuda:3", "--device").ordinal, 3);
  EXPECT_EQ(DeviceSpec::parse("cuda", "--device").kind, DeviceSpec::Kind::cuda);
  EXPECT_EQ(DeviceSpec::parse("sim:80GiB", "--device").to_string(), "sim:80G");
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "sim:", "sim:0", "sim:lots", "cuda:1x"}) {
    EXPECT_THROW(DeviceSpec::parse(bad, "--device"), InputError) << bad;
  }
}

// The errors name the input as the caller calls it (a command's flag), and the value given.
TEST(DeviceSpec, ErrorsNameWhatTheCallerRead) {
  const auto message = [](std::string_view text) {
    try {
      static_cast<void>(DeviceSpec::parse(text, "the job's device"));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(message("gpu7"),
            "the job's device 'gpu7': expected auto, cuda, cuda:N, sim or sim:CAPACITY (e.g. sim:80GiB)");
  EXPECT_EQ(message("sim:0"), "the job's device sim:CAPACITY: the capacity must be more than 0 bytes");
  EXPECT_EQ(message("sim:140T"),
            "the job's device sim:140T: a simulated device holds at most 16T (17592186044416 bytes)");
  EXPECT_EQ(DeviceSpec::parse("sim:16T", "the job's device").what, "the job's device");
}

TEST(DeviceSpec, CudaWithoutGpuIsEnvironmentMissing) {
  if (cuda::device_count() > 0) {
    GTEST_SKIP() << "this machine has a GPU";
  }
  try {
    static_cast<void>(make_backend(DeviceSpec::parse("cuda", "--device")));
    FAIL();
  } catch (const EnvironmentError& e) {
    EXPECT_EQ(e.exit_code(), ExitCode::env_missing);
  }
  EXPECT_FALSE(make_backend(DeviceSpec::parse("auto", "--device"))->has_memory());
}

}  // namespace
}  // namespace memstress

// The CUDA-like order: reservations up to 2 MiB grow from the bottom, larger ones from the top down.
TEST(SimBackend, CudaLikeAddressOrder) {
  memstress::SimBackend sim(1ULL << 30, memstress::SimAddressOrder::cuda_like);
  const auto address = [](void* p) { return reinterpret_cast<std::uintptr_t>(p); };
  void* small1 = sim.try_reserve(2ULL << 20);
  void* small2 = sim.try_reserve(2ULL << 20);
  void* large1 = sim.try_reserve(20ULL << 20);
  void* large2 = sim.try_reserve(20ULL << 20);
  EXPECT_LT(address(small1), address(small2));
  EXPECT_GT(address(large1), address(large2));
  EXPECT_GT(address(large2), address(small2));
  EXPECT_EQ(address(large1) % memstress::SimBackend::kPageBytes, 0U);
  sim.release(large1, 20ULL << 20);
  EXPECT_EQ(sim.try_reserve(20ULL << 20), large1);  // the top again
  sim.release(small1, 2ULL << 20);
  sim.release(small2, 2ULL << 20);
  sim.release(large1, 20ULL << 20);
  sim.release(large2, 20ULL << 20);
  EXPECT_EQ(sim.mem_info().free, 1ULL << 30);
}

namespace memstress {
namespace {

std::uint64_t address(void* p) {
  return reinterpret_cast<std::uint64_t>(p);
}  // NOLINT

TEST(SimBackendPlacements, ReservationsGoWhereTheDriverPutThemWhileTheSizesAgree) {
  SimBackend sim(1ULL << 30, SimAddressOrder::cuda_like);
  sim.follow_placements({{20 << 20, 64 << 20}, {2 << 20, 0}, {20 << 20, 20 << 20}});
  void* a = sim.try_reserve(20 << 20);
  void* b = sim.try_reserve(2 << 20);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(address(a) - address(b), 64ULL << 20);  // the plan's offsets, as recorded
  // The third asks for another size than the plan's third: the plan ends for good.
  void* c = sim.try_reserve(4 << 20);
  ASSERT_NE(c, nullptr);
  void* d = sim.try_reserve(20 << 20);
  ASSERT_NE(d, nullptr);
  EXPECT_NE(address(d) - address(b), 20ULL << 20);
  sim.release(a, 20 << 20);  // back into the plan's region
  EXPECT_EQ(sim.mem_info().free, (1ULL << 30) - (2ULL << 20) - (4ULL << 20) - (20ULL << 20));
}

TEST(SimBackendPlacements, APlannedRangeStillInUseEndsThePlan) {
  SimBackend sim(1ULL << 30, SimAddressOrder::cuda_like);
  sim.follow_placements({{2 << 20, 0}, {2 << 20, 0}});  // the driver reused the address after a free
  void* a = sim.try_reserve(2 << 20);
  void* b = sim.try_reserve(2 << 20);  // a is still live: not the planned address
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
}

TEST(SimBackendPlacements, CapacitiesBeyondTheAddressSpaceAreRefused) {
  EXPECT_THROW(SimBackend(SimBackend::kMaxCapacity + 1), InputError);
  EXPECT_NO_THROW(SimBackend(SimBackend::kMaxCapacity));
}

}  // namespace
}  // namespace memstress
