#include <gtest/gtest.h>

#include "apps/flag_names.hpp"
#include "harness/alloc/direct_allocator.hpp"
#include "harness/alloc/factory.hpp"
#include "harness/core/error.hpp"
#include "harness/memory/sim_backend.hpp"

namespace memstress {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;

TEST(DirectAllocator, StatsFollowAllocationsAndPeaks) {
  SimBackend dev(1ULL << 30);
  DirectAllocator alloc(dev);
  void* a = alloc.allocate(10 * kMiB);
  void* b = alloc.allocate(6 * kMiB);
  MemoryStats s = alloc.memory_stats();
  EXPECT_EQ(s.at("allocated_bytes.all.current"), 16 * kMiB);
  EXPECT_EQ(s.at("reserved_bytes.all.current"), 16 * kMiB);
  EXPECT_EQ(s.at("num_device_alloc"), 2);
  alloc.deallocate(a);
  s = alloc.memory_stats();
  EXPECT_EQ(s.at("allocated_bytes.all.current"), 6 * kMiB);
  EXPECT_EQ(s.at("allocated_bytes.all.peak"), 16 * kMiB);
  EXPECT_EQ(s.at("allocated_bytes.all.freed"), 10 * kMiB);
  alloc.reset_peak_stats();
  EXPECT_EQ(alloc.memory_stats().at("allocated_bytes.all.peak"), 6 * kMiB);
  alloc.deallocate(b);
  alloc.deallocate(nullptr);
  EXPECT_EQ(alloc.memory_stats().at("num_device_free"), 2);
  EXPECT_EQ(dev.mem_info().free, 1ULL << 30);
}

TEST(DirectAllocator, OutOfMemorySaysWhatAndWhere) {
  SimBackend dev(64 * kMiB);
  DirectAllocator alloc(dev);
  void* a = alloc.allocate(40 * kMiB);
  try {
    static_cast<void>(alloc.allocate(40 * kMiB));
    FAIL();
  } catch (const OutOfMemoryError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("40M"), std::string::npos) << what;
    EXPECT_NE(what.find("sim:64M"), std::string::npos) << what;
    EXPECT_NE(what.find("24M free"), std::string::npos) << what;
  }
  EXPECT_EQ(alloc.memory_stats().at("num_ooms"), 1);
  alloc.deallocate(a);
}

TEST(DirectAllocator, ForeignPointerIsAnError) {
  SimBackend dev(64 * kMiB);
  DirectAllocator alloc(dev);
  int x = 0;
  EXPECT_THROW(alloc.deallocate(&x), InputError);
}

TEST(DirectAllocator, DestructorReturnsLeakedMemory) {
  SimBackend dev(64 * kMiB);
  {
    DirectAllocator alloc(dev);
    static_cast<void>(alloc.allocate(8 * kMiB));
  }
  EXPECT_EQ(dev.mem_info().free, 64 * kMiB);
}

TEST(AllocatorFactory, ByNameAndUnknownNames) {
  SimBackend dev(64 * kMiB);
  EXPECT_EQ(make_allocator("direct", dev)->name(), "direct");
  try {
    AllocatorSpec magic;
    magic.name = "magic";
    magic.flags = app::allocator_flags();  // the message names the flag as run spells it
    static_cast<void>(make_allocator(magic, dev));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--allocator 'magic'"), std::string::npos);
  }
}

}  // namespace
}  // namespace memstress
