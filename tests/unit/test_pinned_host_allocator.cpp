#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "harness/alloc/host_memory_source.hpp"
#include "harness/alloc/pinned_host_allocator.hpp"
#include "harness/core/error.hpp"

namespace memstress {
namespace {

constexpr std::size_t kKiB = 1024;

// What a TestSource did, shared with the test so it can be read after the allocator (which owns the
// source) is gone.
struct Ledger {
  struct Record {
    StreamRef stream;
    bool done = false;
    bool waited = false;
    bool released = false;
    int queries = 0;
  };

  std::mutex mutex;
  std::size_t live_blocks = 0;
  std::size_t live_bytes = 0;
  std::size_t allocations = 0;
  std::size_t frees = 0;
  std::size_t failures = 0;
  std::deque<Record> records;  // one per completion handed out; the token is the index

  void complete(StreamRef stream) {
    const std::scoped_lock lock(mutex);
    for (Record& record : records) {
      if (record.stream == stream) {
        record.done = true;
      }
    }
  }
  std::size_t unreleased() {
    const std::scoped_lock lock(mutex);
    std::size_t count = 0;
    for (const Record& record : records) {
      count += record.released ? 0 : 1;
    }
    return count;
  }
};

struct TestSourceOptions {
  std::size_t max_live_blocks = std::numeric_limits<std::size_t>::max();  // beyond it: out of memory
  bool streams = false;         // record completions (else behave as the plain source)
  int done_after_queries = -1;  // >= 0: a completion is done once queried that often (else by complete())
};

// A counting source over ordinary memory, with optional failures and hand-driven completions.
class TestSource final : public HostMemorySource {
 public:
  TestSource(std::shared_ptr<Ledger> ledger, TestSourceOptions options)
      : ledger_(std::move(ledger)), options_(options) {}

  [[nodiscard]] std::string_view name() const noexcept override { return "test"; }
  [[nodiscard]] bool pinned() const noexcept override { return false; }
  [[nodiscard]] void* allocate(std::size_t bytes) override {
    EXPECT_EQ(bytes % kHostPageBytes, 0U);
    const std::scoped_lock lock(ledger_->mutex);
    if (ledger_->live_blocks >= options_.max_live_blocks) {
      ++ledger_->failures;
      return nullptr;
    }
    void* ptr = std::aligned_alloc(kHostPageBytes, bytes);
    ++ledger_->live_blocks;
    ledger_->live_bytes += bytes;
    ++ledger_->allocations;
    return ptr;
  }
  void deallocate(void* ptr, std::size_t bytes) noexcept override {
    const std::scoped_lock lock(ledger_->mutex);
    --ledger_->live_blocks;
    ledger_->live_bytes -= bytes;
    ++ledger_->frees;
    std::free(ptr);  // NOLINT(cppcoreguidelines-no-malloc)
  }

 private:
  Completion do_record(StreamRef stream) override {
    if (!options_.streams) {
      return {};
    }
    const std::scoped_lock lock(ledger_->mutex);
    ledger_->records.push_back(Ledger::Record{.stream = stream});
    return make_completion(ledger_->records.size() - 1);
  }
  bool do_done(std::uintptr_t token) override {
    const std::scoped_lock lock(ledger_->mutex);
    Ledger::Record& record = ledger_->records.at(token);
    EXPECT_FALSE(record.released);
    ++record.queries;
    if (options_.done_after_queries >= 0 && record.queries > options_.done_after_queries) {
      record.done = true;
    }
    return record.done;
  }
  void do_wait(std::uintptr_t token) override {
    const std::scoped_lock lock(ledger_->mutex);
    Ledger::Record& record = ledger_->records.at(token);
    record.waited = true;
    record.done = true;
  }
  void do_release(std::uintptr_t token) noexcept override {
    const std::scoped_lock lock(ledger_->mutex);
    ledger_->records.at(token).released = true;
  }

  std::shared_ptr<Ledger> ledger_;
  TestSourceOptions options_;
};

PinnedHostAllocator make_allocator(const std::shared_ptr<Ledger>& ledger, TestSourceOptions options = {}) {
  return PinnedHostAllocator(std::make_unique<TestSource>(ledger, options));
}

std::int64_t stat(const PinnedHostAllocator& alloc, const char* name) {
  return alloc.memory_stats().at(name);
}

TEST(PinnedHostAllocator, SizeClassesArePowersOfTwoFromOnePage) {
  EXPECT_EQ(PinnedHostAllocator::size_class(1), 4 * kKiB);
  EXPECT_EQ(PinnedHostAllocator::size_class(4 * kKiB), 4 * kKiB);
  EXPECT_EQ(PinnedHostAllocator::size_class(4 * kKiB + 1), 8 * kKiB);
  EXPECT_EQ(PinnedHostAllocator::size_class(5000), 8 * kKiB);
  EXPECT_EQ(PinnedHostAllocator::size_class(6000), 8 * kKiB);
  EXPECT_EQ(PinnedHostAllocator::size_class((1U << 20) + 1), 2U << 20);
  EXPECT_THROW(static_cast<void>(PinnedHostAllocator::size_class(std::numeric_limits<std::size_t>::max())),
               OutOfMemoryError);
}

TEST(PinnedHostAllocator, FreedBlockIsReusedForTheSameClass) {
  auto ledger = std::make_shared<Ledger>();
  PinnedHostAllocator alloc = make_allocator(ledger);
  void* a = alloc.allocate(5000);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % kHostPageBytes, 0U);
  alloc.deallocate(a);
  EXPECT_EQ(alloc.allocate(6000), a);  // same class (8 KiB): the cached block
  void* b = alloc.allocate(9000);      // 16 KiB: a new block
  EXPECT_NE(b, a);
  const MemoryStats s = alloc.memory_stats();
  EXPECT_EQ(s.at("num_cache_hits"), 1);
  EXPECT_EQ(s.at("num_cache_misses"), 2);
  EXPECT_EQ(s.at("num_host_alloc"), 2);
  EXPECT_EQ(s.at("allocated_bytes.all.current"), 24 * kKiB);
  EXPECT_EQ(s.at("requested_bytes.all.current"), 15000);
  EXPECT_EQ(ledger->allocations, 2U);
  alloc.deallocate(a);
  alloc.deallocate(b);
  alloc.deallocate(nullptr);
  EXPECT_EQ(alloc.allocate(0), nullptr);
}

TEST(PinnedHostAllocator, StatsKeepTheirInvariants) {
  auto ledger = std::make_shared<Ledger>();
  PinnedHostAllocator alloc = make_allocator(ledger);
  std::vector<void*> blocks;
  std::int64_t classes = 0;
  for (const std::size_t bytes : {1UL, 4096UL, 5000UL, 70000UL, 1UL << 20}) {
    blocks.push_back(alloc.allocate(bytes));
    classes += static_cast<std::int64_t>(PinnedHostAllocator::size_class(bytes));
    EXPECT_LE(stat(alloc, "allocated_bytes.all.current"), stat(alloc, "reserved_bytes.all.current"));
  }
  EXPECT_EQ(stat(alloc, "allocated_bytes.all.current"), classes);
  EXPECT_EQ(stat(alloc, "reserved_bytes.all.current"), classes);
  EXPECT_EQ(stat(alloc, "allocation.all.current"), 5);
  EXPECT_EQ(stat(alloc, "segment.all.current"), 5);
  for (void* p : blocks) {
    alloc.deallocate(p);
  }
  MemoryStats s = alloc.memory_stats();
  EXPECT_EQ(s.at("allocated_bytes.all.current"), 0);
  EXPECT_EQ(s.at("allocated_bytes.all.peak"), classes);
  EXPECT_EQ(s.at("allocated_bytes.all.freed"), classes);
  EXPECT_EQ(s.at("allocation.all.current"), 0);
  EXPECT_EQ(s.at("requested_bytes.all.current"), 0);
  EXPECT_EQ(s.at("pending_free_bytes"), 0);
  EXPECT_EQ(s.at("reserved_bytes.all.current"), classes);  // all of it cached
  EXPECT_EQ(static_cast<std::int64_t>(ledger->live_bytes), classes);
  alloc.reset_peak_stats();
  EXPECT_EQ(stat(alloc, "allocated_bytes.all.peak"), 0);
  EXPECT_EQ(stat(alloc, "reserved_bytes.all.peak"), classes);
  alloc.empty_cache();
  s = alloc.memory_stats();
  EXPECT_EQ(s.at("reserved_bytes.all.current"), 0);
  EXPECT_EQ(s.at("segment.all.current"), 0);
  EXPECT_EQ(s.at("num_host_free"), 5);
  EXPECT_EQ(ledger->live_blocks, 0U);
}

TEST(PinnedHostAllocator, OutOfMemoryEmptiesTheCacheRetriesThenThrows) {
  auto ledger = std::make_shared<Ledger>();
  PinnedHostAllocator alloc = make_allocator(ledger, {.max_live_blocks = 2});
  void* a = alloc.allocate(4 * kKiB);
  void* b = alloc.allocate(8 * kKiB);
  alloc.deallocate(b);                  // cached: the source still counts it
  void* c = alloc.allocate(16 * kKiB);  // the source fails; the cache gives b back; the retry succeeds
  ASSERT_NE(c, nullptr);
  MemoryStats s = alloc.memory_stats();
  EXPECT_EQ(s.at("num_alloc_retries"), 1);
  EXPECT_EQ(s.at("num_host_free"), 1);
  EXPECT_EQ(s.at("num_ooms"), 0);
  EXPECT_EQ(ledger->failures, 1U);
  try {
    static_cast<void>(alloc.allocate(20000));  // nothing cached to give back
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("20000 bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("size class 32K"), std::string::npos) << what;
    EXPECT_NE(what.find("test source"), std::string::npos) << what;
    EXPECT_NE(what.find("20K allocated in 2 blocks"), std::string::npos) << what;
  }
  s = alloc.memory_stats();
  EXPECT_EQ(s.at("num_ooms"), 1);
  EXPECT_EQ(s.at("num_alloc_retries"), 2);
  EXPECT_EQ(ledger->failures, 3U);
  alloc.deallocate(a);
  alloc.deallocate(c);
}

TEST(PinnedHostAllocator, PendingBlockWaitsForEveryRecordedStream) {
  auto ledger = std::make_shared<Ledger>();
  PinnedHostAllocator alloc = make_allocator(ledger, {.streams = true});
  const StreamRef s1{1};
  const StreamRef s2{2};
  void* a = alloc.allocate(5000);
  alloc.record_stream(a, s1);
  alloc.record_stream(a, s2);
  alloc.record_stream(a, s1);  // once per stream
  alloc.deallocate(a);
  EXPECT_EQ(ledger->records.size(), 2U);
  EXPECT_EQ(stat(alloc, "pending_free_bytes"), 8 * kKiB);
  EXPECT_EQ(stat(alloc, "pending_free_blocks"), 1);
  EXPECT_EQ(stat(alloc, "allocated_bytes.all.current"), 0);

  void* b = alloc.allocate(6000);  // same class, but a's streams have not passed it
  EXPECT_NE(b, a);
  alloc.empty_cache();  // cannot release a pending block
  EXPECT_EQ(stat(alloc, "reserved_bytes.all.current"), 16 * kKiB);

  ledger->complete(s1);
  void* c = alloc.allocate(8 * kKiB);  // s2 still uses a
  EXPECT_NE(c, a);
  EXPECT_NE(c, b);
  ledger->complete(s2);
  EXPECT_EQ(alloc.allocate(8 * kKiB), a);  // now it is reusable
  EXPECT_EQ(stat(alloc, "pending_free_bytes"), 0);
  EXPECT_EQ(ledger->unreleased(), 0U);  // every completion went back to the source

  // A block with no recorded stream is reusable at once, even with a source that has streams.
  alloc.deallocate(c);
  EXPECT_EQ(alloc.allocate(8 * kKiB), c);
  for (void* p : {a, b, c}) {
    alloc.deallocate(p);
  }
}

TEST(PinnedHostAllocator, EmptyCacheReleasesPendingBlocksOnceDone) {
  auto ledger = std::make_shared<Ledger>();
  PinnedHostAllocator alloc = make_allocator(ledger, {.streams = true});
  void* a = alloc.allocate(100 * kKiB);
  alloc.record_stream(a, StreamRef{7});
  alloc.deallocate(a);
  alloc.empty_cache();
  EXPECT_EQ(ledger->live_blocks, 1U);
  ledger->complete(StreamRef{7});
  alloc.empty_cache();
  EXPECT_EQ(ledger->live_blocks, 0U);
  EXPECT_EQ(stat(alloc, "reserved_bytes.all.current"), 0);
  EXPECT_EQ(stat(alloc, "pending_free_bytes"), 0);
  EXPECT_EQ(ledger->unreleased(), 0U);
}

TEST(PinnedHostAllocator, PlainSourceIsNotPinnedAndHasNoStreams) {
  PinnedHostAllocator alloc(make_host_memory_source("plain"));
  EXPECT_FALSE(alloc.pinned());
  EXPECT_EQ(alloc.source_name(), "plain");
  auto* a = static_cast<unsigned char*>(alloc.allocate(5000));
  std::memset(a, 0xA5, 5000);
  alloc.record_stream(a, StreamRef{3});
  alloc.deallocate(a);
  EXPECT_EQ(stat(alloc, "pending_free_bytes"), 0);
  EXPECT_EQ(alloc.allocate(8 * kKiB), a);
  alloc.deallocate(a);
  EXPECT_THROW(static_cast<void>(make_host_memory_source("pageable")), InputError);
}

TEST(PinnedHostAllocator, ForeignPointersAndDoubleFreesAreErrors) {
  auto ledger = std::make_shared<Ledger>();
  PinnedHostAllocator alloc = make_allocator(ledger);
  int x = 0;
  EXPECT_THROW(alloc.deallocate(&x), InputError);
  EXPECT_THROW(alloc.record_stream(&x, StreamRef{1}), InputError);
  void* a = alloc.allocate(1);
  alloc.deallocate(a);
  EXPECT_THROW(alloc.deallocate(a), InputError);
  EXPECT_THROW(alloc.record_stream(a, StreamRef{1}), InputError);
  EXPECT_EQ(stat(alloc, "allocation.all.current"), 0);
}

TEST(PinnedHostAllocator, DestructorFreesEverythingAndWarnsOnce) {
  auto ledger = std::make_shared<Ledger>();
  {
    PinnedHostAllocator alloc = make_allocator(ledger, {.streams = true});
    static_cast<void>(alloc.allocate(3 * kKiB));  // leaked
    void* used = alloc.allocate(1 * kKiB);        // leaked while a stream uses it
    alloc.record_stream(used, StreamRef{5});
    alloc.deallocate(alloc.allocate(64 * kKiB));  // cached
    void* pending = alloc.allocate(8 * kKiB);     // pending on stream 4
    alloc.record_stream(pending, StreamRef{4});
    alloc.deallocate(pending);
    EXPECT_EQ(ledger->live_blocks, 4U);
    ::testing::internal::CaptureStderr();
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(
      err,
      "memstress: pinned host allocator (test source) destroyed with 2 blocks (8K) still allocated; freeing "
      "them\n");
  EXPECT_EQ(ledger->live_blocks, 0U);
  EXPECT_EQ(ledger->frees, 4U);
  ASSERT_EQ(ledger->records.size(), 2U);
  EXPECT_TRUE(ledger->records[0].waited);  // the pending block's stream
  EXPECT_TRUE(ledger->records[1].waited);  // the leaked block's stream
  EXPECT_EQ(ledger->unreleased(), 0U);
}

TEST(PinnedHostAllocator, MovesOwnership) {
  auto ledger = std::make_shared<Ledger>();
  PinnedHostAllocator first = make_allocator(ledger);
  void* a = first.allocate(1);
  PinnedHostAllocator second(std::move(first));
  EXPECT_THROW(static_cast<void>(first.allocate(1)), std::logic_error);  // NOLINT(bugprone-use-after-move)
  second.deallocate(a);
  PinnedHostAllocator third = make_allocator(ledger);
  static_cast<void>(third.allocate(1));
  ::testing::internal::CaptureStderr();
  third = std::move(second);  // third's old cache goes (warning about its live block)
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("1 blocks"), std::string::npos);
  EXPECT_EQ(third.allocate(2), a);
  third.deallocate(a);
}

TEST(PinnedHostAllocator, ManyThreadsAllocateAndFree) {
  constexpr int kThreads = 8;
  constexpr int kOps = 10'000;
  auto ledger = std::make_shared<Ledger>();
  // Completions are done on their second query: pending blocks are reused or released a little later.
  PinnedHostAllocator alloc = make_allocator(ledger, {.streams = true, .done_after_queries = 1});
  std::vector<std::int64_t> allocations(kThreads, 0);
  std::vector<std::int64_t> corrupt(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      struct Live {
        unsigned char* ptr;
        std::size_t bytes;
        unsigned char tag;
      };
      std::mt19937_64 rng(static_cast<std::uint64_t>(t) + 1);
      std::vector<Live> live;
      const auto index = static_cast<std::size_t>(t);
      const auto free_one = [&](std::size_t i) {
        const Live block = live[i];
        if (block.ptr[0] != block.tag || block.ptr[block.bytes - 1] != block.tag) {
          ++corrupt[index];
        }
        if (rng() % 2 == 0) {
          alloc.record_stream(block.ptr, StreamRef{rng() % 4});
        }
        alloc.deallocate(block.ptr);
        live[i] = live.back();
        live.pop_back();
      };
      for (int op = 0; op < kOps; ++op) {
        const std::uint64_t dice = rng() % 100;
        if (dice < 2) {
          alloc.empty_cache();
        } else if (live.empty() || dice < 55) {
          const std::size_t bytes = std::size_t{1} << (rng() % 17);  // 1 B .. 64 KiB
          const std::size_t jittered = bytes + rng() % bytes;
          auto* p = static_cast<unsigned char*>(alloc.allocate(jittered));
          const auto tag = static_cast<unsigned char>(rng());
          p[0] = tag;
          p[jittered - 1] = tag;
          live.push_back({p, jittered, tag});
          ++allocations[index];
        } else {
          free_one(static_cast<std::size_t>(rng() % live.size()));
        }
      }
      while (!live.empty()) {
        free_one(live.size() - 1);
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  std::int64_t total_allocations = 0;
  for (int t = 0; t < kThreads; ++t) {
    total_allocations += allocations[static_cast<std::size_t>(t)];
    EXPECT_EQ(corrupt[static_cast<std::size_t>(t)], 0) << "thread " << t;
  }
  MemoryStats s = alloc.memory_stats();
  EXPECT_EQ(s.at("allocated_bytes.all.current"), 0);
  EXPECT_EQ(s.at("requested_bytes.all.current"), 0);
  EXPECT_EQ(s.at("allocation.all.current"), 0);
  EXPECT_EQ(s.at("allocation.all.allocated"), total_allocations);
  EXPECT_EQ(s.at("num_cache_hits") + s.at("num_cache_misses"), total_allocations);
  EXPECT_EQ(s.at("num_host_alloc"), s.at("num_cache_misses"));
  EXPECT_EQ(s.at("segment.all.current"), s.at("num_host_alloc") - s.at("num_host_free"));
  EXPECT_LE(s.at("allocated_bytes.all.peak"), s.at("reserved_bytes.all.peak"));
  EXPECT_LE(s.at("pending_free_bytes"), s.at("reserved_bytes.all.current"));
  EXPECT_GT(s.at("num_cache_hits"), 0);
  {
    const std::scoped_lock lock(ledger->mutex);
    EXPECT_EQ(static_cast<std::int64_t>(ledger->live_bytes), s.at("reserved_bytes.all.current"));
    EXPECT_EQ(static_cast<std::int64_t>(ledger->live_blocks), s.at("segment.all.current"));
  }
  alloc.empty_cache();  // completions not queried yet are queried once here, and done at the second query
  alloc.empty_cache();
  s = alloc.memory_stats();
  EXPECT_EQ(s.at("reserved_bytes.all.current"), 0);
  EXPECT_EQ(s.at("pending_free_bytes"), 0);
  EXPECT_EQ(s.at("pending_free_blocks"), 0);
  EXPECT_EQ(ledger->live_blocks, 0U);
  EXPECT_EQ(ledger->unreleased(), 0U);
}

}  // namespace
}  // namespace memstress
