// Note [Releasing, incrementally] (caching_allocator.hpp): an allocation that does not fit makes the
// allocator give back what it has cached, device-wide, and retry. These tests count what that slow path looks
// at (slow_path_work()) on a device that is full, so that a release that visits every stream or every cached
// block at each refusal (what made a trace of 200,000 streams at capacity run for hours) fails here, at sizes
// where it still finishes in a blink; and they check that what is given back is still everything PyTorch's
// release gives back. Nothing here is timed.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "harness/alloc/caching/caching_allocator.hpp"
#include "harness/core/error.hpp"
#include "harness/memory/sim_backend.hpp"

namespace memstress {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;

using caching::CachingAllocator;

std::int64_t stat(const Allocator& a, const std::string& key) {
  return a.memory_stats().at(key);
}

// `streams` streams each ask for 100 bytes once (a small-pool segment of 2 MiB each) on a device that holds
// `fits` such segments: every stream past them is refused after a release and a retry.
struct FullDevice {
  FullDevice(std::uint64_t fits, const std::string& conf)
      : dev(fits * 2 * kMiB), alloc(dev, AllocConfig::parse(conf, "test")) {}
  std::uint64_t run(std::uint64_t streams) {
    std::uint64_t refused = 0;
    for (std::uint64_t s = 1; s <= streams; ++s) {
      try {
        ptrs.push_back(alloc.allocate(100, StreamRef{s}));
      } catch (const OutOfMemoryError&) {
        ++refused;
      }
    }
    return refused;
  }
  ~FullDevice() {
    for (void* p : ptrs) {
      alloc.deallocate(p);
    }
  }
  FullDevice(const FullDevice&) = delete;
  FullDevice& operator=(const FullDevice&) = delete;
  FullDevice(FullDevice&&) = delete;
  FullDevice& operator=(FullDevice&&) = delete;

  SimBackend dev;
  CachingAllocator alloc;
  std::vector<void*> ptrs;
};

// 2,048 streams on a device that holds 1,024: 1,024 refusals. Visiting every stream at each would be two
// million visits (and as many statistics re-read); what changed is about one stream a refusal, and the
// 1,024 streams that filled the device once.
TEST(CachingReleaseWork, StreamsRefusedAtCapacityVisitOnlyWhatChanged) {
  constexpr std::uint64_t kFits = 1024;
  constexpr std::uint64_t kStreams = 2048;
  for (const std::string conf : {"", "expandable_segments:True", "max_split_size_mb:64",
                                 "per_process_memory_fraction:0.9,garbage_collection_threshold:0.5"}) {
    SCOPED_TRACE(conf);
    FullDevice full(kFits, conf);
    const std::uint64_t fits = conf.find("fraction") != std::string::npos ? kFits * 9 / 10 : kFits;
    EXPECT_EQ(full.run(kStreams), kStreams - fits);
    EXPECT_EQ(stat(full.alloc, "num_ooms"), static_cast<std::int64_t>(kStreams - fits));
    EXPECT_EQ(stat(full.alloc, "reserved_bytes.all.current"), static_cast<std::int64_t>(fits * 2 * kMiB));
    const CachingAllocator::SlowPathWork work = full.alloc.slow_path_work();
    EXPECT_LE(work.streams, 8 * kStreams) << "the slow path visits streams that did not change";
    EXPECT_LE(work.blocks, 8 * kStreams) << "the slow path examines blocks a release does not give back";
  }
}

// One stream with a thousand split segments cached (three 6 MiB blocks in use in each 20 MiB segment, 2 MiB
// of it free), refused again and again: no segment is whole, and a release finds so without looking at the
// thousand free blocks each time.
TEST(CachingReleaseWork, RefusalsLookAtNoSplitBlock) {
  constexpr std::uint64_t kSegments = 1000;
  constexpr std::uint64_t kRefusals = 500;
  SimBackend dev(kSegments * 20 * kMiB);
  CachingAllocator a(dev, AllocConfig::parse("", "test"));
  std::vector<void*> held;
  for (std::uint64_t i = 0; i < 3 * kSegments; ++i) {
    held.push_back(a.allocate(6 * kMiB));
  }
  EXPECT_EQ(stat(a, "segment.all.current"), static_cast<std::int64_t>(kSegments));
  EXPECT_EQ(stat(a, "inactive_split.all.current"), static_cast<std::int64_t>(kSegments));
  const CachingAllocator::SlowPathWork before = a.slow_path_work();
  for (std::uint64_t i = 0; i < kRefusals; ++i) {
    EXPECT_THROW(static_cast<void>(a.allocate(40 * kMiB)), OutOfMemoryError);
  }
  EXPECT_EQ(stat(a, "segment.all.current"), static_cast<std::int64_t>(kSegments));
  const CachingAllocator::SlowPathWork after = a.slow_path_work();
  EXPECT_LE(after.blocks - before.blocks, kRefusals) << "each refusal looks at the cached split blocks";
  EXPECT_LE(after.streams - before.streams, 4 * kRefusals);
  for (void* p : held) {
    a.deallocate(p);
  }
}

// What a release gives back is unchanged: every whole cached segment of every stream, however long ago the
// stream last changed, and again once the streams change again.
TEST(CachingReleaseWork, ReleaseStillGivesBackEveryStreamsWholeSegments) {
  constexpr std::uint64_t kStreams = 32;
  SimBackend dev(kStreams * 50 * kMiB + 40 * kMiB);
  CachingAllocator a(dev, AllocConfig::parse("", "test"));
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    std::vector<void*> kept;
    for (std::uint64_t s = 1; s <= kStreams; ++s) {
      kept.push_back(a.allocate(6 * kMiB, StreamRef{s}));  // a 20 MiB segment, split
      void* whole = a.allocate(30 * kMiB, StreamRef{s});   // a segment of exactly 30 MiB
      a.deallocate(whole);                                 // cached whole
    }
    EXPECT_EQ(stat(a, "segment.all.current"), static_cast<std::int64_t>(2 * kStreams));
    // 200 MiB on another stream: nothing cached fits and the device has 40 MiB left, so the allocator gives
    // back every whole segment (PyTorch's release frees them all, not just enough) and reserves it.
    void* big = a.allocate(200 * kMiB, StreamRef{kStreams + 1});
    EXPECT_EQ(stat(a, "segment.all.current"), static_cast<std::int64_t>(kStreams + 1));
    EXPECT_EQ(stat(a, "reserved_bytes.all.current"), static_cast<std::int64_t>((kStreams * 20 + 200) * kMiB));
    EXPECT_EQ(stat(a, "num_alloc_retries"), round + 1);  // the retry after the release
    a.deallocate(big);
    for (void* p : kept) {
      a.deallocate(p);
    }
    a.empty_cache();
    EXPECT_EQ(stat(a, "segment.all.current"), 0);
  }
  EXPECT_EQ(stat(a, "num_sync_all_streams"), 6);
}

}  // namespace
}  // namespace memstress
