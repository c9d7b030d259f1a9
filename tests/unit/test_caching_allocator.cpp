// PyTorch's exact behaviours, pending frees, expandable segments and the OOM path of the caching
// allocator, on the simulated device.

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "harness/alloc/caching/address_map.hpp"
#include "harness/alloc/caching/caching_allocator.hpp"
#include "harness/core/error.hpp"
#include "harness/memory/sim_backend.hpp"
#include "harness/stats/fragmentation.hpp"
#include "harness/stats/memory_summary.hpp"

namespace memstress {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;
constexpr std::uint64_t kGiB = 1ULL << 30;

using caching::CachingAllocator;

std::int64_t stat(const Allocator& a, const std::string& key) {
  return a.memory_stats().at(key);
}

CachingAllocator make(SimBackend& dev, std::string_view conf = "") {
  return CachingAllocator(dev, AllocConfig::parse(conf, "test"));
}

std::vector<void*> allocate_n(Allocator& a, int n, std::uint64_t bytes) {
  std::vector<void*> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(a.allocate(bytes));
  }
  return out;
}

void free_all(Allocator& a, const std::vector<void*>& ptrs) {
  for (void* p : ptrs) {
    a.deallocate(p);
  }
}

TEST(CachingAllocator, EightSixteensThenFourThirtyTwosReserves256MiB) {
  SimBackend dev(8 * kGiB);
  CachingAllocator a = make(dev);
  free_all(a, allocate_n(a, 8, 16 * kMiB));
  const auto big = allocate_n(a, 4, 32 * kMiB);
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), static_cast<std::int64_t>(256 * kMiB));
  EXPECT_EQ(stat(a, "segment.all.current"), 12);
  EXPECT_EQ(stat(a, "inactive_split.all.current"), 0);
  free_all(a, big);
}

TEST(CachingAllocator, ReverseOrderReserves128MiB) {
  SimBackend dev(8 * kGiB);
  CachingAllocator a = make(dev);
  free_all(a, allocate_n(a, 4, 32 * kMiB));
  const auto small = allocate_n(a, 8, 16 * kMiB);
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), static_cast<std::int64_t>(128 * kMiB));
  EXPECT_EQ(stat(a, "segment.all.current"), 4);
  EXPECT_EQ(stat(a, "allocated_bytes.all.current"), static_cast<std::int64_t>(128 * kMiB));
  free_all(a, small);
  // Everything freed: the 32 MiB segments merge back whole.
  EXPECT_EQ(stat(a, "inactive_split.all.current"), 0);
  EXPECT_EQ(stat(a, "allocated_bytes.all.current"), 0);
}

TEST(CachingAllocator, OneMiBBoundaryBetweenThePools) {
  SimBackend dev(8 * kGiB);
  CachingAllocator a = make(dev);
  void* small = a.allocate(kMiB);
  EXPECT_EQ(stat(a, "reserved_bytes.small_pool.current"), static_cast<std::int64_t>(2 * kMiB));
  void* large = a.allocate(kMiB + 1);
  EXPECT_EQ(stat(a, "reserved_bytes.large_pool.current"), static_cast<std::int64_t>(20 * kMiB));
  EXPECT_EQ(stat(a, "inactive_split_bytes.large_pool.current"), static_cast<std::int64_t>(19 * kMiB - 512));
  a.deallocate(small);
  a.deallocate(large);
  // A large-pool block with at most 1 MiB to spare is handed out whole: the slack counts as allocated.
  void* whole = a.allocate(19 * kMiB + kMiB / 2);
  EXPECT_EQ(stat(a, "allocated_bytes.all.current"), static_cast<std::int64_t>(20 * kMiB));
  EXPECT_EQ(stat(a, "requested_bytes.all.current"), static_cast<std::int64_t>(19 * kMiB + kMiB / 2));
  a.deallocate(whole);
}

TEST(CachingAllocator, MaxSplitSizeKeepsOversizeBlocksWhole) {
  SimBackend dev(8 * kGiB);
  CachingAllocator a = make(dev, "max_split_size_mb:32");
  free_all(a, allocate_n(a, 4, 32 * kMiB));
  EXPECT_EQ(stat(a, "oversize_segments.current"), 4);
  const auto small = allocate_n(a, 8, 16 * kMiB);  // oversize cached blocks are not split for them
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), static_cast<std::int64_t>(256 * kMiB));
  free_all(a, small);
  // An oversize request takes a cached oversize block only within 20 MiB of its size.
  void* p64 = a.allocate(64 * kMiB);
  a.deallocate(p64);
  void* p40 = a.allocate(40 * kMiB);
  EXPECT_NE(p40, p64);
  void* p50 = a.allocate(50 * kMiB);
  EXPECT_EQ(p50, p64);
  EXPECT_EQ(stat(a, "allocated_bytes.all.current"), static_cast<std::int64_t>(40 * kMiB + 64 * kMiB));
  EXPECT_EQ(stat(a, "max_split_size"), static_cast<std::int64_t>(32 * kMiB));
  a.deallocate(p40);
  a.deallocate(p50);
}

TEST(CachingAllocator, SmallRequestsPackIntoTwoMiBSegments) {
  SimBackend dev(kGiB);
  CachingAllocator a = make(dev);
  const auto ptrs = allocate_n(a, 4096, 512);
  EXPECT_EQ(stat(a, "segment.small_pool.current"), 1);
  void* next = a.allocate(512);
  EXPECT_EQ(stat(a, "segment.small_pool.current"), 2);
  a.deallocate(next);
  free_all(a, ptrs);
  a.empty_cache();
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), 0);
  EXPECT_EQ(dev.mem_info().free, kGiB);
}

TEST(CachingAllocator, EmptyCacheKeepsOnlySegmentsInUse) {
  SimBackend dev(kGiB);
  CachingAllocator a = make(dev);
  void* keep = a.allocate(4 * kMiB);  // in a 20 MiB segment, split
  free_all(a, allocate_n(a, 3, 30 * kMiB));
  a.empty_cache();
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), static_cast<std::int64_t>(20 * kMiB));
  EXPECT_EQ(stat(a, "inactive_split_bytes.all.current"), static_cast<std::int64_t>(16 * kMiB));
  EXPECT_EQ(kGiB - dev.mem_info().free, 20 * kMiB);
  a.deallocate(keep);
  a.empty_cache();
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), 0);
}

TEST(CachingAllocator, FailedReserveFreesTheCacheAndRetries) {
  SimBackend dev(64 * kMiB);
  CachingAllocator a = make(dev);
  a.deallocate(a.allocate(40 * kMiB));  // 40 MiB stays cached
  void* p = a.allocate(50 * kMiB);      // needs it back
  EXPECT_EQ(stat(a, "num_alloc_retries"), 1);
  EXPECT_EQ(stat(a, "num_sync_all_streams"), 1);
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), static_cast<std::int64_t>(50 * kMiB));
  try {
    static_cast<void>(a.allocate(100 * kMiB));
    FAIL();
  } catch (const OutOfMemoryError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("out of memory: tried to allocate 100.00 MiB"), std::string::npos) << what;
    EXPECT_NE(what.find("The device is full"), std::string::npos) << what;
  }
  EXPECT_EQ(stat(a, "num_ooms"), 1);
  a.deallocate(p);
}

TEST(CachingAllocator, OutOfMemoryMessageExplainsFragmentation) {
  SimBackend dev(80 * kMiB);
  CachingAllocator a = make(dev);
  const auto pieces = allocate_n(a, 16, 5 * kMiB);  // four 20 MiB segments, full
  for (std::size_t i = 0; i < pieces.size(); i += 2) {
    a.deallocate(pieces[i]);  // 40 MiB cached, in 5 MiB holes
  }
  try {
    static_cast<void>(a.allocate(12 * kMiB));
    FAIL();
  } catch (const OutOfMemoryError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("40.00 MiB cached but unallocated"), std::string::npos) << what;
    EXPECT_NE(what.find("the largest free cached block 5.00 MiB"), std::string::npos) << what;
    EXPECT_NE(what.find("fragmentation"), std::string::npos) << what;
    EXPECT_NE(what.find("expandable_segments:True"), std::string::npos) << what;
  }
  for (std::size_t i = 1; i < pieces.size(); i += 2) {
    a.deallocate(pieces[i]);
  }
}

TEST(CachingAllocator, MemoryFractionCapsReservedMemory) {
  SimBackend dev(100 * kMiB);
  CachingAllocator a = make(dev, "per_process_memory_fraction:0.5");
  void* p = a.allocate(40 * kMiB);
  try {
    static_cast<void>(a.allocate(20 * kMiB));
    FAIL();
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("per_process_memory_fraction"), std::string::npos) << e.what();
  }
  EXPECT_EQ(dev.mem_info().free, 60 * kMiB);  // the device was never asked
  a.deallocate(p);
}

TEST(CachingAllocator, GarbageCollectionFreesOldCachedSegmentsUnderAFraction) {
  SimBackend dev(100 * kMiB);
  CachingAllocator a = make(dev, "per_process_memory_fraction:1.0,garbage_collection_threshold:0.5");
  free_all(a, allocate_n(a, 3, 20 * kMiB));  // 60 MiB cached, above 50 MiB
  void* p = a.allocate(30 * kMiB);           // no fit: GC first, then a new segment
  // The three cached segments are equally old: one full pass frees them all, as PyTorch's does.
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), static_cast<std::int64_t>(30 * kMiB));
  EXPECT_EQ(stat(a, "num_alloc_retries"), 0);
  a.deallocate(p);
}

TEST(CachingAllocator, PendingFreeIsNotReusedUntilTheOtherStreamPassesIt) {
  SimBackend dev(kGiB);
  CachingAllocator a = make(dev);
  const StreamRef s1{1};
  const StreamRef s2{2};
  void* p = a.allocate(4 * kMiB, s1);
  a.record_stream(p, s2);
  dev.hold_stream(s2);  // a kernel on s2 still uses p
  a.deallocate(p);
  EXPECT_EQ(stat(a, "allocated_bytes.all.current"), 0);
  EXPECT_EQ(stat(a, "active_bytes.all.current"), static_cast<std::int64_t>(20 * kMiB - 16 * kMiB));
  void* q = a.allocate(4 * kMiB, s1);
  EXPECT_NE(q, p);
  const nlohmann::json snap = a.snapshot();
  bool pending_seen = false;
  for (const auto& seg : snap["segments"]) {
    for (const auto& b : seg["blocks"]) {
      pending_seen = pending_seen || b["state"] == "active_pending_free";
    }
  }
  EXPECT_TRUE(pending_seen);
  dev.release_stream(s2);
  void* r = a.allocate(4 * kMiB, s1);
  EXPECT_EQ(r, p);
  a.deallocate(q);
  a.deallocate(r);
  EXPECT_EQ(dev.live_events(), 0U);
}

TEST(CachingAllocator, BlocksStayOnTheirStream) {
  SimBackend dev(kGiB);
  CachingAllocator a = make(dev);
  void* p = a.allocate(4 * kMiB, StreamRef{1});
  a.deallocate(p);
  void* q = a.allocate(4 * kMiB, StreamRef{2});
  EXPECT_NE(p, q);
  EXPECT_EQ(stat(a, "segment.all.current"), 2);
  a.deallocate(q);
}

TEST(CachingAllocator, ExpandableSegmentsGrowInPlace) {
  SimBackend dev(8 * kGiB);
  CachingAllocator a = make(dev, "expandable_segments:True");
  EXPECT_EQ(a.name(), "expandable");
  free_all(a, allocate_n(a, 8, 16 * kMiB));
  const auto big = allocate_n(a, 4, 32 * kMiB);
  // One growing segment: 128 MiB of 20 MiB pages, reused in place for the larger requests.
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), static_cast<std::int64_t>(140 * kMiB));
  EXPECT_EQ(dev.mapped_bytes(), 140 * kMiB);
  free_all(a, big);
  a.empty_cache();
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), 0);
  EXPECT_EQ(dev.mapped_bytes(), 0U);
  EXPECT_EQ(dev.mem_info().free, 8 * kGiB);
}

TEST(CachingAllocator, ExpandableUnmapsOnlyWholeFreePages) {
  SimBackend dev(8 * kGiB);
  CachingAllocator a = make(dev, "expandable_segments:True");
  void* first = a.allocate(30 * kMiB);   // pages 0-1 (40 MiB)
  void* second = a.allocate(30 * kMiB);  // rest of page 1, page 2
  a.deallocate(first);
  a.empty_cache();  // page 0 is wholly free; page 1 is shared with `second`
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), static_cast<std::int64_t>(40 * kMiB));
  void* again = a.allocate(25 * kMiB);  // no cached block fits: the lowest unmapped hole is refilled first
  EXPECT_EQ(again, first);
  a.deallocate(again);
  a.deallocate(second);
  a.empty_cache();
  EXPECT_EQ(dev.mapped_bytes(), 0U);
}

TEST(CachingAllocator, DeallocateOfAForeignPointerIsAnError) {
  SimBackend dev(kGiB);
  CachingAllocator a = make(dev);
  int x = 0;
  EXPECT_THROW(a.deallocate(&x), InputError);
  void* p = a.allocate(1000);
  a.deallocate(p);
  EXPECT_THROW(a.deallocate(p), InputError);
}

TEST(CachingAllocator, ZeroBytesIsNull) {
  SimBackend dev(kGiB);
  CachingAllocator a = make(dev);
  EXPECT_EQ(a.allocate(0), nullptr);
  a.deallocate(nullptr);
  EXPECT_EQ(stat(a, "allocation.all.allocated"), 0);
}

}  // namespace
}  // namespace memstress

namespace memstress {
namespace {

TEST(CachingAllocatorStats, DevicePeaksAreExactWhileOneThreadDrivesManyStreams) {
  SimBackend dev(kGiB);
  CachingAllocator a = make(dev);
  void* p = a.allocate(30 * kMiB, StreamRef{1});
  a.deallocate(p);
  void* q = a.allocate(30 * kMiB, StreamRef{2});  // stream 1 dropped to 0 before stream 2 rose
  a.deallocate(q);
  EXPECT_EQ(stat(a, "allocated_bytes.all.peak"), static_cast<std::int64_t>(30 * kMiB));  // not 60
  EXPECT_EQ(stat(a, "byte_peaks_exact"), 1);
  EXPECT_EQ(stat(a, "peaks_exact"), 0);  // two streams: the other peaks are sums of the streams' peaks
  std::thread([&] { a.deallocate(a.allocate(1024, StreamRef{3})); }).join();
  EXPECT_EQ(stat(a, "byte_peaks_exact"), 0);
  EXPECT_GE(stat(a, "allocated_bytes.all.peak"), static_cast<std::int64_t>(30 * kMiB));
  EXPECT_EQ(stat(a, "allocated_bytes.all.current"), 0);
}

}  // namespace
}  // namespace memstress

namespace memstress {
namespace {

TEST(AddressMap, InsertFindEraseAgainstAReference) {
  caching::AddressMap<int> map;
  std::map<std::uintptr_t, int*> reference;
  std::vector<int> values(5000);
  std::mt19937_64 rng(3);
  for (int op = 0; op < 200000; ++op) {
    const std::uintptr_t key = 512 * (1 + rng() % 3000);
    if (rng() % 2 == 0 && !reference.contains(key)) {
      int* v = &values[rng() % values.size()];
      map.insert(key, v);
      reference[key] = v;
    } else {
      const auto it = reference.find(key);
      ASSERT_EQ(map.erase(key), it == reference.end() ? nullptr : it->second);
      if (it != reference.end()) {
        reference.erase(it);
      }
    }
    if (op % 1000 == 0) {
      for (const auto& [k, v] : reference) {
        ASSERT_EQ(map.find(k), v);
      }
      ASSERT_EQ(map.size(), reference.size());
    }
  }
}

}  // namespace
}  // namespace memstress

namespace memstress {
namespace {

TEST(Fragmentation, TheThreeFiguresFromStatistics) {
  SimBackend dev(80 * kMiB);
  CachingAllocator a = make(dev);
  const auto pieces = allocate_n(a, 16, 5 * kMiB);  // four full 20 MiB segments
  for (std::size_t i = 0; i < pieces.size(); i += 2) {
    a.deallocate(pieces[i]);  // 40 MiB free in 5 MiB holes
  }
  const Fragmentation f = fragmentation(a.memory_stats());
  EXPECT_EQ(f.reserved_minus_allocated, static_cast<std::int64_t>(40 * kMiB));
  EXPECT_DOUBLE_EQ(f.utilization, 1.0);  // the peak allocated filled the peak reserved
  ASSERT_TRUE(f.external.has_value());
  EXPECT_DOUBLE_EQ(*f.external, 1.0 - 5.0 / 40.0);
  const std::string summary = memory_summary(a.memory_stats(), "sim:80M (caching)");
  EXPECT_NE(summary.find("Fragmentation: reserved - allocated 40.00 MiB, utilization 1.000, external 0.875"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("| Allocated memory      |"), std::string::npos) << summary;
  for (std::size_t i = 1; i < pieces.size(); i += 2) {
    a.deallocate(pieces[i]);
  }
}

}  // namespace
}  // namespace memstress

namespace memstress {
namespace {

TEST(CachingAllocatorLimits, AbsurdRequestsAreOutOfMemoryNotAWrappedSize) {
  SimBackend dev(kGiB);
  CachingAllocator a = make(dev);
  EXPECT_THROW(static_cast<void>(a.allocate(~std::size_t{0})), OutOfMemoryError);
  EXPECT_THROW(static_cast<void>(a.allocate(~std::size_t{0} - (1ULL << 20))), OutOfMemoryError);
  EXPECT_EQ(stat(a, "num_ooms"), 2);
  EXPECT_EQ(stat(a, "allocated_bytes.all.current"), 0);
}

TEST(CachingAllocatorLimits, ThousandsOfStreamsDoNotDeadlock) {
  SimBackend dev(16 * kGiB);
  CachingAllocator a = make(dev);
  for (std::uintptr_t s = 1; s <= 1500; ++s) {  // past the lock-free table's 1024 slots
    a.deallocate(a.allocate(512, StreamRef{s}));
  }
  EXPECT_EQ(stat(a, "segment.all.current"), 1500);
  a.deallocate(a.allocate(512, StreamRef{1400}));  // found again in the overflow map
  EXPECT_EQ(stat(a, "segment.all.current"), 1500);
}

TEST(CachingAllocatorStats, StatisticsReadIncrementallyMatchEveryStreamsSum) {
  // Note [Statistics, incrementally]: the totals kept from the streams changed since the last read equal
  // a fresh sum, across reads, resets, frees and an empty_cache, with more streams than the lock-free table.
  SimBackend dev(64 * kGiB);
  CachingAllocator a = make(dev);
  std::vector<void*> live;
  std::vector<std::uint64_t> sizes;
  std::mt19937 rng(7);
  std::int64_t allocated = 0;
  for (std::uintptr_t s = 1; s <= 3000; ++s) {
    sizes.push_back(512 * (1 + rng() % 64));
    live.push_back(a.allocate(sizes.back(), StreamRef{s}));
    allocated += static_cast<std::int64_t>(sizes.back());
    if (s % 700 == 0) {
      EXPECT_EQ(stat(a, "allocated_bytes.all.current"), allocated) << s;
      EXPECT_EQ(stat(a, "segment.all.current"), static_cast<std::int64_t>(s));
      a.reset_peak_stats();
    }
  }
  EXPECT_EQ(stat(a, "allocation.all.current"), 3000);
  EXPECT_EQ(stat(a, "allocation.all.peak"), 3000);  // each stream's peak is its one block
  std::uint64_t smallest_kept = 2 * kMiB;
  for (std::size_t i = 0; i < live.size(); ++i) {
    if (i % 2 == 0) {
      a.deallocate(live[i]);
    } else {
      smallest_kept = std::min(smallest_kept, sizes[i]);
    }
  }
  EXPECT_EQ(stat(a, "allocation.all.current"), 1500);
  EXPECT_EQ(stat(a, "allocation.all.peak"), 3000);  // peaks not reset since
  a.reset_peak_stats();
  EXPECT_EQ(stat(a, "allocation.all.peak"), 1500);  // every stream's peak at its current again
  EXPECT_EQ(stat(a, "largest_free_block_bytes"),
            static_cast<std::int64_t>(2 * kMiB));  // a whole free segment
  a.empty_cache();
  EXPECT_EQ(stat(a, "segment.all.current"), 1500);
  // What is left free: the rest of each segment beside its block.
  EXPECT_EQ(stat(a, "largest_free_block_bytes"), static_cast<std::int64_t>(2 * kMiB - smallest_kept));
  for (std::size_t i = 1; i < live.size(); i += 2) {
    a.deallocate(live[i]);
  }
  a.empty_cache();
  EXPECT_EQ(stat(a, "allocated_bytes.all.current"), 0);
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), 0);
  EXPECT_EQ(stat(a, "largest_free_block_bytes"), 0);
}

TEST(CachingAllocatorStats, StatisticsReadWhileOtherThreadsAllocateEndAtTheTruth) {
  // Note [Statistics, incrementally] under threads: while four threads allocate and free on streams of their
  // own, a fifth reads and resets the statistics in a loop (the queue of changed streams, drained as streams
  // are marked again). Once they stop, the figures read are every stream's own, with both segment kinds.
  for (const char* conf : {"", "expandable_segments:True"}) {
    SimBackend dev(64 * kGiB);
    CachingAllocator a = make(dev, conf);
    std::atomic<bool> stop{false};
    std::atomic<std::int64_t> reads{0};
    std::thread reader([&] {
      while (!stop.load()) {
        static_cast<void>(a.memory_stats());
        a.reset_peak_stats();
        reads.fetch_add(1);
      }
    });
    constexpr int kThreads = 4;
    std::vector<std::vector<std::pair<void*, std::uint64_t>>> kept(kThreads);
    std::vector<std::thread> workers;
    for (int t = 0; t < kThreads; ++t) {
      workers.emplace_back([&, t] {
        // The reader first: on a loaded machine the workers could otherwise finish before it read once.
        while (reads.load() == 0) {
          std::this_thread::yield();
        }
        std::mt19937 rng(static_cast<unsigned>(t) + 1);
        std::vector<std::pair<void*, std::uint64_t>>& mine = kept[static_cast<std::size_t>(t)];
        for (int i = 0; i < 4000; ++i) {
          const StreamRef stream{static_cast<std::uintptr_t>(1 + t * 3 + static_cast<int>(rng() % 3))};
          if (mine.size() > 32 || (!mine.empty() && rng() % 2 == 0)) {
            const std::size_t at = rng() % mine.size();
            a.deallocate(mine[at].first);
            mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(at));
          } else {
            const std::uint64_t bytes = 512ULL << (rng() % 14);
            mine.emplace_back(a.allocate(bytes, stream), bytes);
          }
        }
      });
    }
    for (std::thread& w : workers) {
      w.join();
    }
    stop.store(true);
    reader.join();
    EXPECT_GT(reads.load(), 0) << conf;
    std::int64_t live = 0;
    std::int64_t bytes = 0;
    for (const auto& mine : kept) {
      live += static_cast<std::int64_t>(mine.size());
      for (const auto& [p, n] : mine) {
        bytes += static_cast<std::int64_t>(n);
      }
    }
    EXPECT_EQ(stat(a, "allocation.all.current"), live) << conf;
    EXPECT_EQ(stat(a, "requested_bytes.all.current"), bytes) << conf;
    a.reset_peak_stats();
    EXPECT_EQ(stat(a, "allocation.all.peak"), live) << conf;  // every stream's peak at its current
    for (const auto& mine : kept) {
      for (const auto& [p, n] : mine) {
        a.deallocate(p);
      }
    }
    a.empty_cache();
    EXPECT_EQ(stat(a, "allocated_bytes.all.current"), 0) << conf;
    EXPECT_EQ(stat(a, "reserved_bytes.all.current"), 0) << conf;
  }
}

TEST(CachingAllocatorLimits, EveryStreamGetsAnExpandableSegmentOnALargeDevice) {
  // Each stream's expandable segment reserves 1.125 times the device: on 1 TiB, the simulated 111 TiB
  // of address ranges ran out at the 98th stream, and every later allocation failed (Note [Simulated
  // address ranges]). Ranges continue above 2^48 now, and the owner map holds mapped pages only.
  SimBackend dev(1ULL << 40);
  CachingAllocator a = make(dev, "expandable_segments:True");
  std::vector<void*> live;
  for (std::uintptr_t s = 1; s <= 300; ++s) {
    live.push_back(a.allocate(100, StreamRef{s}));
  }
  EXPECT_EQ(stat(a, "num_ooms"), 0);
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), static_cast<std::int64_t>(300 * 2 * kMiB));
  for (void* p : live) {
    a.deallocate(p);  // found through the owner map, above 2^48 too
  }
  a.empty_cache();
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), 0);
  EXPECT_EQ(dev.mapped_bytes(), 0U);
}

TEST(CachingAllocatorLimits, RacingThreadsCannotPassTheMemoryFraction) {
  for (int round = 0; round < 50; ++round) {
    SimBackend dev(100 * kMiB);
    CachingAllocator a = make(dev, "per_process_memory_fraction:0.5");
    std::atomic<int> succeeded{0};
    std::vector<void*> got(2, nullptr);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < 2; ++t) {
      threads.emplace_back([&, t] {
        try {
          got[t] = a.allocate(30 * kMiB, StreamRef{t + 1});
          ++succeeded;
        } catch (const OutOfMemoryError&) {
        }
      });
    }
    for (auto& th : threads) {
      th.join();
    }
    EXPECT_EQ(succeeded.load(), 1) << "round " << round;
    EXPECT_LE(stat(a, "reserved_bytes.all.current"), static_cast<std::int64_t>(50 * kMiB));
    for (void* p : got) {
      a.deallocate(p);
    }
  }
}

}  // namespace
}  // namespace memstress
