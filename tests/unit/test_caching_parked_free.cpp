// Note [Parked free] (caching_allocator.hpp): a free's merges wait until the next call on the stream, which
// may take the parked block straight back. These tests drive two allocators through the same random
// calls: one as it runs in production, the other made to finish every parked free at once (each call is
// followed by largest_free_block(), which unparks). Every address handed out, every statistic and every
// snapshot must be the same: parking may change the work done, never the result.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "harness/alloc/caching/caching_allocator.hpp"
#include "harness/core/error.hpp"
#include "harness/memory/sim_backend.hpp"

namespace memstress {
namespace {

constexpr std::uint64_t kKiB = 1ULL << 10;
constexpr std::uint64_t kMiB = 1ULL << 20;

using caching::CachingAllocator;

struct Twin {
  Twin(std::uint64_t capacity, const std::string& conf)
      : dev(capacity, SimAddressOrder::cuda_like), alloc(dev, AllocConfig::parse(conf, "test")) {}
  SimBackend dev;
  CachingAllocator alloc;
};

struct Live {
  void* ptr = nullptr;
  std::uint64_t bytes = 0;
  StreamRef stream;
};

// One allocation on both; both must give the same address, or both run out of memory.
std::optional<void*> allocate_both(Twin& parked, Twin& eager, std::uint64_t bytes, StreamRef stream) {
  void* p = nullptr;
  void* q = nullptr;
  bool p_oom = false;
  bool q_oom = false;
  try {
    p = parked.alloc.allocate(bytes, stream);
  } catch (const OutOfMemoryError&) {
    p_oom = true;
  }
  try {
    q = eager.alloc.allocate(bytes, stream);
  } catch (const OutOfMemoryError&) {
    q_oom = true;
  }
  (void)eager.alloc.largest_free_block();
  EXPECT_EQ(p_oom, q_oom) << bytes << " bytes";
  EXPECT_EQ(p, q) << bytes << " bytes";
  if (p_oom || q_oom || p != q) {
    return std::nullopt;
  }
  return p;
}

// One free on both; the eager twin then finishes it.
void free_both(Twin& parked, Twin& eager, void* ptr) {
  parked.alloc.deallocate(ptr);
  eager.alloc.deallocate(ptr);
  (void)eager.alloc.largest_free_block();
}

void expect_same(const Twin& parked, const Twin& eager, int step) {
  ASSERT_EQ(parked.alloc.memory_stats(), eager.alloc.memory_stats()) << "step " << step;
  ASSERT_EQ(parked.alloc.snapshot(), eager.alloc.snapshot()) << "step " << step;
}

void run_random(const std::string& conf, std::uint64_t capacity, unsigned seed) {
  SCOPED_TRACE(testing::Message() << "config '" << conf << "', seed " << seed);
  Twin parked(capacity, conf);
  Twin eager(capacity, conf);
  std::mt19937_64 rng(seed);
  const std::vector<std::uint64_t> sizes{512,      1 * kKiB,  4 * kKiB,  100 * kKiB, 1 * kMiB,
                                         3 * kMiB, 12 * kMiB, 19 * kMiB, 30 * kMiB,  90 * kMiB};
  const std::vector<StreamRef> streams{StreamRef{0}, StreamRef{1}, StreamRef{2}};
  std::vector<Live> live;
  std::vector<bool> held(streams.size(), false);
  const auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  for (int step = 0; step < 6000; ++step) {
    const std::uint64_t roll = rng() % 100;
    if (roll < 35 || live.empty()) {  // allocate
      const StreamRef stream = streams[pick(streams.size())];
      const std::uint64_t bytes = sizes[pick(sizes.size())] + (rng() % 3 == 0 ? rng() % 4096 : 0);
      if (const auto p = allocate_both(parked, eager, bytes, stream)) {
        live.push_back({*p, bytes, stream});
      }
    } else if (roll < 60) {  // free
      const std::size_t i = pick(live.size());
      free_both(parked, eager, live[i].ptr);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (roll < 88) {  // the pair: free and ask again, the same size or a near one
      const std::size_t i = pick(live.size());
      Live l = live[i];
      free_both(parked, eager, l.ptr);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      const std::uint64_t bytes = rng() % 4 == 0 ? sizes[pick(sizes.size())] : l.bytes;
      if (const auto p = allocate_both(parked, eager, bytes, l.stream)) {
        live.push_back({*p, bytes, l.stream});
      }
    } else if (roll < 92) {  // used on another stream too: its free waits for that stream
      const Live& l = live[pick(live.size())];
      const StreamRef other = streams[pick(streams.size())];
      parked.alloc.record_stream(l.ptr, other);
      eager.alloc.record_stream(l.ptr, other);
    } else if (roll < 97) {  // a stream starts or finishes its work
      const std::size_t s = pick(streams.size());
      if (held[s]) {
        parked.dev.release_stream(streams[s]);
        eager.dev.release_stream(streams[s]);
      } else {
        parked.dev.hold_stream(streams[s]);
        eager.dev.hold_stream(streams[s]);
      }
      held[s] = !held[s];
    } else if (roll < 98) {
      parked.alloc.empty_cache();
      eager.alloc.empty_cache();
    } else {
      expect_same(parked, eager, step);
    }
    if (testing::Test::HasFailure()) {
      return;
    }
  }
  for (std::size_t s = 0; s < streams.size(); ++s) {
    if (held[s]) {
      parked.dev.release_stream(streams[s]);
      eager.dev.release_stream(streams[s]);
    }
  }
  for (const Live& l : live) {
    parked.alloc.deallocate(l.ptr);
    eager.alloc.deallocate(l.ptr);
  }
  expect_same(parked, eager, -1);
}

TEST(ParkedFree, RandomCallsGiveWhatFinishingEveryFreeGives) {
  for (unsigned seed = 1; seed <= 4; ++seed) {
    run_random("", 8ULL << 30, seed);
  }
}

TEST(ParkedFree, UnderAFractionGarbageCollectionAndOutOfMemory) {
  for (unsigned seed = 1; seed <= 4; ++seed) {
    run_random("per_process_memory_fraction:0.5,garbage_collection_threshold:0.6", 1ULL << 30, seed);
  }
}

TEST(ParkedFree, WithMaxSplitSizeAndRoundingDivisions) {
  for (unsigned seed = 1; seed <= 3; ++seed) {
    run_random("max_split_size_mb:20,roundup_power2_divisions:4", 2ULL << 30, seed);
  }
}

TEST(ParkedFree, WithExpandableSegments) {
  run_random("expandable_segments:True", 2ULL << 30, 7);
}

// Best fit still decides: a whole free segment of the same size as the parked block merged with its free
// next block ties with it, and the lower address wins (PyTorch's order), whichever segment that is.
TEST(ParkedFree, ATieWithAnotherFreeBlockGoesToTheLowerAddress) {
  for (const SimAddressOrder order : {SimAddressOrder::first_fit, SimAddressOrder::cuda_like}) {
    SimBackend dev(1ULL << 30, order);
    CachingAllocator a(dev, AllocConfig::parse("", "test"));
    void* p1 = a.allocate(kMiB);
    void* p2 = a.allocate(kMiB);        // p1 and p2 fill one 2 MiB segment
    void* p3 = a.allocate(512 * kKiB);  // a second segment: p3 and 1.5 MiB free
    a.deallocate(p1);
    a.deallocate(p2);  // the first segment is one free 2 MiB block
    a.deallocate(p3);  // parked: with its next block, also 2 MiB
    void* q = a.allocate(512 * kKiB);
    EXPECT_EQ(q, std::min(p1, p3, std::less<>()));
    a.deallocate(q);
    EXPECT_EQ(a.memory_stats().at("inactive_split.all.current"), 0);
    EXPECT_EQ(a.memory_stats().at("segment.all.current"), 2);
  }
}

// The pair the benchmarks time: the freed block comes straight back, with every figure of a real
// merge-and-split (a cumulative count per pair, the currents as before).
TEST(ParkedFree, ThePairCountsAsAMergeAndASplit) {
  SimBackend dev(1ULL << 30);
  CachingAllocator a(dev, AllocConfig::parse("", "test"));
  void* first = a.allocate(kMiB);
  a.deallocate(first);
  const MemoryStats before = a.memory_stats();
  for (int i = 0; i < 10; ++i) {
    void* p = a.allocate(kMiB);
    EXPECT_EQ(p, first);
    a.deallocate(p);
  }
  const MemoryStats after = a.memory_stats();
  EXPECT_EQ(after.at("allocation.all.allocated") - before.at("allocation.all.allocated"), 10);
  EXPECT_EQ(after.at("inactive_split.all.freed") - before.at("inactive_split.all.freed"), 10);
  EXPECT_EQ(after.at("inactive_split.all.allocated") - before.at("inactive_split.all.allocated"), 10);
  EXPECT_EQ(after.at("inactive_split.all.current"), 0);
  EXPECT_EQ(after.at("segment.all.current"), 1);
  EXPECT_EQ(after.at("largest_free_block_bytes"), static_cast<std::int64_t>(2 * kMiB));
}

}  // namespace
}  // namespace memstress
