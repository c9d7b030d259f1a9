// The allocator adaptors (limiting, statistics, tracing) over a DirectAllocator on a simulated device.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "harness/alloc/adaptors.hpp"
#include "harness/alloc/async_allocator.hpp"
#include "harness/alloc/direct_allocator.hpp"
#include "harness/core/error.hpp"
#include "harness/memory/sim_backend.hpp"
#include "harness/trace/trace_reader.hpp"
#include "temp_dir.hpp"

namespace memstress {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kMiB = 1ULL << 20;
constexpr std::uint64_t kGiB = 1ULL << 30;

std::unique_ptr<Allocator> direct(SimBackend& dev) {
  return std::make_unique<DirectAllocator>(dev);
}

std::string oom_message(Allocator& alloc, std::size_t bytes, StreamRef stream = {}) {
  try {
    static_cast<void>(alloc.allocate(bytes, stream));
  } catch (const OutOfMemoryError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no OutOfMemoryError for " << bytes << " bytes";
  return "";
}

// Result of hammering an allocator from several threads with a deterministic mix of sizes.
struct HammerTotals {
  std::atomic<std::int64_t> allocs{0};
  std::atomic<std::int64_t> bytes{0};
  std::atomic<std::int64_t> ooms{0};
};

// 8 threads, each allocating sizes from its own generator, holding up to 8 blocks and freeing the
// oldest; every block is freed at the end.
void hammer(Allocator& alloc, HammerTotals& totals, int iterations = 2000) {
  std::vector<std::jthread> threads;
  for (std::uint64_t t = 0; t < 8; ++t) {
    threads.emplace_back([&alloc, &totals, iterations, t] {
      std::uint64_t state = 0x9e3779b97f4a7c15ULL * (t + 1);
      std::vector<void*> held;
      for (int i = 0; i < iterations; ++i) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        const std::size_t bytes = 1 + (state >> 33) % (4 * kMiB);
        try {
          held.push_back(alloc.allocate(bytes, StreamRef{t}));
          totals.allocs += 1;
          totals.bytes += static_cast<std::int64_t>(bytes);
        } catch (const OutOfMemoryError&) {
          totals.ooms += 1;
        }
        if (held.size() > 8) {
          alloc.deallocate(held.front());
          held.erase(held.begin());
        }
      }
      for (void* p : held) {
        alloc.deallocate(p);
      }
    });
  }
}

using testing::TempDir;

std::vector<std::string> lines_of(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

// The line with its time_ns column (the second) replaced by "T", so lines compare exactly.
std::string without_time(const std::string& line) {
  const std::size_t first = line.find(',');
  const std::size_t second = line.find(',', first + 1);
  if (first == std::string::npos || second == std::string::npos) {
    return line;
  }
  return line.substr(0, first + 1) + "T" + line.substr(second);
}

// ---- limiting ----------------------------------------------------------------------------------

TEST(LimitingAllocator, ExactlyAtTheCapIsFineOneByteOverIsNot) {
  SimBackend dev(kGiB);
  auto alloc = make_limiting_allocator(direct(dev), 10 * kMiB);
  EXPECT_EQ(alloc->name(), "limiting(direct)");
  EXPECT_EQ(&alloc->backend(), &dev);
  void* a = alloc->allocate(4 * kMiB);
  void* b = alloc->allocate(6 * kMiB);  // exactly at the cap
  const std::string what = oom_message(*alloc, 1);
  EXPECT_NE(what.find("sim:1G"), std::string::npos) << what;
  EXPECT_NE(what.find("limit of 10M (10485760 bytes)"), std::string::npos) << what;
  EXPECT_NE(what.find("allocating 1B (1 bytes)"), std::string::npos) << what;
  EXPECT_NE(what.find("10M (10485760 bytes) is allocated through it in 2 allocations"), std::string::npos)
      << what;
  MemoryStats s = alloc->memory_stats();
  EXPECT_EQ(s.at("limit_bytes"), 10 * kMiB);
  EXPECT_EQ(s.at("limit_allocated_bytes.all.current"), 10 * kMiB);
  EXPECT_EQ(s.at("limit_allocated_bytes.all.peak"), 10 * kMiB);
  EXPECT_EQ(s.at("limit_num_ooms"), 1);
  EXPECT_EQ(s.at("num_ooms"), 1);                             // the upstream saw none
  EXPECT_EQ(s.at("allocated_bytes.all.current"), 10 * kMiB);  // the upstream's keys stay
  alloc->deallocate(a);                                       // freeing makes room…
  void* c = alloc->allocate(4 * kMiB);                        // …for exactly as much
  EXPECT_THROW(static_cast<void>(alloc->allocate(1)), OutOfMemoryError);
  alloc->deallocate(b);
  alloc->deallocate(c);
  alloc->reset_peak_stats();
  s = alloc->memory_stats();
  EXPECT_EQ(s.at("limit_allocated_bytes.all.current"), 0);
  EXPECT_EQ(s.at("limit_allocated_bytes.all.peak"), 0);
  EXPECT_EQ(s.at("allocated_bytes.all.peak"), 0);  // forwarded to the upstream
  EXPECT_EQ(s.at("num_ooms"), 2);
}

TEST(LimitingAllocator, AnUpstreamOomGivesTheChargeBackAndCountsOnce) {
  SimBackend dev(64 * kMiB);
  auto alloc = make_limiting_allocator(direct(dev), kGiB);
  EXPECT_THROW(static_cast<void>(alloc->allocate(128 * kMiB)), OutOfMemoryError);
  const MemoryStats s = alloc->memory_stats();
  EXPECT_EQ(s.at("limit_allocated_bytes.all.current"), 0);
  EXPECT_EQ(s.at("limit_allocated_bytes.all.peak"), 0);
  EXPECT_EQ(s.at("limit_num_ooms"), 0);
  EXPECT_EQ(s.at("num_ooms"), 1);
  void* p = alloc->allocate(64 * kMiB);
  alloc->deallocate(p);
}

TEST(LimitingAllocator, ZeroLimitAndForeignPointers) {
  SimBackend dev(kGiB);
  auto alloc = make_limiting_allocator(direct(dev), 0);
  EXPECT_THROW(static_cast<void>(alloc->allocate(1)), OutOfMemoryError);
  int x = 0;
  EXPECT_THROW(alloc->deallocate(&x), InputError);
  alloc->deallocate(nullptr);
  EXPECT_THROW(static_cast<void>(make_limiting_allocator(nullptr, 1)), std::invalid_argument);
}

TEST(LimitingAllocator, EightThreadsNeverPassTheCapAndEndAtZero) {
  SimBackend dev(16 * kGiB);
  // Tight enough that one thread alone (up to 9 blocks of 2 MiB on average) is refused at times, so the
  // refusals do not depend on how the threads happen to interleave.
  auto alloc = make_limiting_allocator(direct(dev), 16 * kMiB);
  HammerTotals totals;
  hammer(*alloc, totals);
  const MemoryStats s = alloc->memory_stats();
  EXPECT_EQ(s.at("limit_allocated_bytes.all.current"), 0);
  EXPECT_LE(s.at("limit_allocated_bytes.all.peak"), 16 * kMiB);
  EXPECT_GT(s.at("limit_allocated_bytes.all.peak"), 8 * kMiB);
  EXPECT_GT(totals.ooms.load(), 0);
  EXPECT_EQ(s.at("limit_num_ooms"), totals.ooms.load());
  EXPECT_EQ(s.at("num_ooms"), totals.ooms.load());
  EXPECT_EQ(s.at("allocated_bytes.all.current"), 0);
  EXPECT_EQ(s.at("allocated_bytes.all.allocated"), totals.bytes.load());
  EXPECT_EQ(dev.mem_info().free, 16 * kGiB);
}

// ---- statistics --------------------------------------------------------------------------------

TEST(StatisticsAllocator, PyTorchCountersFollowAllocationsFreesAndPeaks) {
  SimBackend dev(64 * kMiB);
  auto alloc = make_statistics_allocator(direct(dev));
  EXPECT_EQ(alloc->name(), "statistics(direct)");
  void* a = alloc->allocate(1000);
  void* b = alloc->allocate(3000, StreamRef{5});
  alloc->deallocate(a);
  EXPECT_THROW(static_cast<void>(alloc->allocate(128 * kMiB)), OutOfMemoryError);
  MemoryStats s = alloc->memory_stats();
  for (const std::string prefix : {"allocated_bytes.all", "requested_bytes.all"}) {
    EXPECT_EQ(s.at(prefix + ".current"), 3000) << prefix;
    EXPECT_EQ(s.at(prefix + ".peak"), 4000) << prefix;
    EXPECT_EQ(s.at(prefix + ".allocated"), 4000) << prefix;
    EXPECT_EQ(s.at(prefix + ".freed"), 1000) << prefix;
  }
  EXPECT_EQ(s.at("allocation.all.current"), 1);
  EXPECT_EQ(s.at("allocation.all.peak"), 2);
  EXPECT_EQ(s.at("allocation.all.allocated"), 2);
  EXPECT_EQ(s.at("allocation.all.freed"), 1);
  EXPECT_EQ(s.at("num_ooms"), 1);
  EXPECT_EQ(s.at("reserved_bytes.all.current"), 3000);  // the upstream's own keys stay
  alloc->reset_peak_stats();
  s = alloc->memory_stats();
  EXPECT_EQ(s.at("requested_bytes.all.peak"), 3000);
  EXPECT_EQ(s.at("allocation.all.peak"), 1);
  EXPECT_EQ(s.at("reserved_bytes.all.peak"), 3000);  // forwarded
  alloc->deallocate(b);
  int x = 0;
  EXPECT_THROW(alloc->deallocate(&x), InputError);
}

// An upstream with its own opinion of allocated_bytes, nullptr for 0 bytes (the seam's contract), and
// a count of the record_stream calls that reach it.
class FakeUpstream final : public Allocator {
 public:
  FakeUpstream(SimBackend& dev, int& record_streams) : inner_(dev), record_streams_(record_streams) {}
  [[nodiscard]] std::string_view name() const noexcept override { return "fake"; }
  [[nodiscard]] DeviceBackend& backend() const noexcept override { return inner_.backend(); }
  [[nodiscard]] MemoryStats memory_stats() const override {
    return {{"allocated_bytes.all.current", 12345}, {"custom", 7}, {"num_ooms", 0}};
  }
  void reset_peak_stats() override {}

 private:
  void* do_allocate(std::size_t bytes, StreamRef stream) override {
    return bytes == 0 ? nullptr : inner_.allocate(bytes, stream);
  }
  void do_deallocate(void* ptr) override { inner_.deallocate(ptr); }
  void do_record_stream(void* /*ptr*/, StreamRef /*stream*/) override { ++record_streams_; }
  DirectAllocator inner_;
  int& record_streams_;
};

TEST(Adaptors, ZeroBytesIsNullptrAndLeavesNoTraceRecordStreamIsForwarded) {
  const TempDir dir;
  SimBackend dev(kGiB);
  int record_streams = 0;
  auto alloc = make_tracing_allocator(make_statistics_allocator(make_limiting_allocator(
                                          std::make_unique<FakeUpstream>(dev, record_streams), kMiB)),
                                      dir.file("t.csv"), "--alloc-trace");
  EXPECT_EQ(alloc->allocate(0, StreamRef{3}), nullptr);
  alloc->deallocate(nullptr);
  void* p = alloc->allocate(kMiB);
  alloc->record_stream(p, StreamRef{3});
  EXPECT_EQ(record_streams, 1);
  alloc->deallocate(p);
  const MemoryStats s = alloc->memory_stats();
  EXPECT_EQ(s.at("allocation.all.allocated"), 1);
  EXPECT_EQ(s.at("limit_allocated_bytes.all.peak"), kMiB);
  alloc.reset();
  EXPECT_EQ(read_trace(dir.file("t.csv")).events.size(), 2U);
}

TEST(StatisticsAllocator, ItsOwnKeysWinOverTheUpstreams) {
  SimBackend dev(64 * kMiB);
  int record_streams = 0;
  auto alloc = make_statistics_allocator(std::make_unique<FakeUpstream>(dev, record_streams));
  void* p = alloc->allocate(512);
  const MemoryStats s = alloc->memory_stats();
  EXPECT_EQ(s.at("allocated_bytes.all.current"), 512);
  EXPECT_EQ(s.at("custom"), 7);
  alloc->deallocate(p);
}

TEST(StatisticsAllocator, EightThreadsEndConsistent) {
  SimBackend dev(16 * kGiB);
  auto alloc = make_statistics_allocator(direct(dev));
  HammerTotals totals;
  hammer(*alloc, totals);
  const MemoryStats s = alloc->memory_stats();
  EXPECT_EQ(totals.ooms.load(), 0);
  EXPECT_EQ(s.at("allocation.all.current"), 0);
  EXPECT_EQ(s.at("allocation.all.allocated"), totals.allocs.load());
  EXPECT_EQ(s.at("allocation.all.freed"), totals.allocs.load());
  EXPECT_LE(s.at("allocation.all.peak"), 8 * 9);
  EXPECT_EQ(s.at("requested_bytes.all.current"), 0);
  EXPECT_EQ(s.at("requested_bytes.all.allocated"), totals.bytes.load());
  EXPECT_EQ(s.at("requested_bytes.all.freed"), totals.bytes.load());
  EXPECT_EQ(s.at("requested_bytes.all.peak"), s.at("allocated_bytes.all.peak"));
  EXPECT_EQ(s.at("num_ooms"), 0);
}

// ---- tracing -----------------------------------------------------------------------------------

TEST(TracingAllocator, WritesTheExpectedLinesAndReadsThemBack) {
  const TempDir dir;
  const fs::path path = dir.file("trace.csv");
  SimBackend dev(64 * kMiB);
  {
    auto alloc = make_tracing_allocator(direct(dev), path, "--alloc-trace");
    EXPECT_EQ(alloc->name(), "tracing(direct)");
    void* a = alloc->allocate(kMiB);
    void* b = alloc->allocate(4096, StreamRef{7});
    alloc->deallocate(a);
    EXPECT_THROW(static_cast<void>(alloc->allocate(128 * kMiB)), OutOfMemoryError);
    void* c = alloc->allocate(kMiB);  // most likely a's address again: a new id all the same
    alloc->deallocate(b);
    alloc->deallocate(c);
    alloc->deallocate(nullptr);  // not an event
    void* leaked = alloc->allocate(512, StreamRef{7});
    static_cast<void>(leaked);                           // live when the allocator goes: no free line
    EXPECT_EQ(alloc->memory_stats().at("num_ooms"), 1);  // the upstream's statistics, forwarded
  }
  const std::vector<std::string> expected{
      "# memstress-trace v1",          "seq,time_ns,action,id,bytes,stream,device",
      "0,T,alloc,0,1048576,0,sim:64M", "1,T,alloc,1,4096,7,sim:64M",
      "2,T,free,0,1048576,0,sim:64M",  "3,T,oom,,134217728,0,sim:64M",
      "4,T,alloc,2,1048576,0,sim:64M", "5,T,free,1,4096,7,sim:64M",
      "6,T,free,2,1048576,0,sim:64M",  "7,T,alloc,3,512,7,sim:64M",
  };
  std::vector<std::string> lines = lines_of(path);
  for (std::size_t i = 2; i < lines.size(); ++i) {
    lines[i] = without_time(lines[i]);
  }
  EXPECT_EQ(lines, expected);

  const Trace trace = read_trace(path);
  ASSERT_EQ(trace.events.size(), 8U);
  const std::vector<TraceEvent> want{
      {0, 0, TraceAction::alloc, 0, kMiB, 0, "sim:64M"},
      {1, 0, TraceAction::alloc, 1, 4096, 7, "sim:64M"},
      {2, 0, TraceAction::free, 0, kMiB, 0, "sim:64M"},
      {3, 0, TraceAction::oom, std::nullopt, 128 * kMiB, 0, "sim:64M"},
      {4, 0, TraceAction::alloc, 2, kMiB, 0, "sim:64M"},
      {5, 0, TraceAction::free, 1, 4096, 7, "sim:64M"},
      {6, 0, TraceAction::free, 2, kMiB, 0, "sim:64M"},
      {7, 0, TraceAction::alloc, 3, 512, 7, "sim:64M"},
  };
  for (std::size_t i = 0; i < want.size(); ++i) {
    TraceEvent got = trace.events[i];
    if (i > 0) {
      EXPECT_LE(trace.events[i - 1].time_ns, got.time_ns);
    }
    got.time_ns = 0;
    EXPECT_EQ(got, want[i]) << "event " << i;
  }
  EXPECT_TRUE(trace.skipped_actions.empty());
}

TEST(TracingAllocator, UnwritableTraceNamesTheFlag) {
  SimBackend dev(64 * kMiB);
  const fs::path bad = fs::temp_directory_path() / "memstress-no-such-dir" / "sub" / "t.csv";
  try {
    static_cast<void>(make_tracing_allocator(direct(dev), bad, "--alloc-trace"));
    FAIL();
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("--alloc-trace '" + bad.string() + "'", 0), 0U) << what;
  }
}

TEST(TracingAllocator, ForeignPointerIsAnErrorAndWritesNothing) {
  const TempDir dir;
  SimBackend dev(64 * kMiB);
  {
    auto alloc = make_tracing_allocator(direct(dev), dir.file("t.csv"), "--alloc-trace");
    int x = 0;
    EXPECT_THROW(alloc->deallocate(&x), InputError);
  }
  EXPECT_TRUE(read_trace(dir.file("t.csv")).events.empty());
}

TEST(TracingAllocator, EightThreadsGiveAConsistentTrace) {
  const TempDir dir;
  SimBackend dev(16 * kGiB);
  HammerTotals totals;
  {
    auto alloc = make_tracing_allocator(direct(dev), dir.file("t.csv"), "--alloc-trace");
    hammer(*alloc, totals, 1000);
  }
  const Trace trace = read_trace(dir.file("t.csv"));  // checks seq order and alloc/free pairing
  const auto allocs = static_cast<std::size_t>(totals.allocs.load());
  ASSERT_EQ(trace.events.size(), 2 * allocs);
  std::uint64_t next_id = 0;
  std::int64_t live = 0;
  std::int64_t bytes = 0;
  for (const TraceEvent& e : trace.events) {
    ASSERT_TRUE(e.id.has_value());
    if (e.action == TraceAction::alloc) {
      EXPECT_EQ(*e.id, next_id++);  // ids appear in increasing order
      EXPECT_LT(e.stream, 8U);
      ++live;
      bytes += static_cast<std::int64_t>(e.bytes);
    } else {
      --live;
    }
  }
  EXPECT_EQ(live, 0);
  EXPECT_EQ(bytes, totals.bytes.load());
}

TEST(Adaptors, StackOverOneAnother) {
  const TempDir dir;
  SimBackend dev(kGiB);
  auto alloc =
      make_tracing_allocator(make_statistics_allocator(make_limiting_allocator(direct(dev), 8 * kMiB)),
                             dir.file("t.csv"), "--alloc-trace");
  EXPECT_EQ(alloc->name(), "tracing(statistics(limiting(direct)))");
  void* p = alloc->allocate(8 * kMiB);
  EXPECT_THROW(static_cast<void>(alloc->allocate(1)), OutOfMemoryError);
  alloc->deallocate(p);
  alloc->empty_cache();
  const MemoryStats s = alloc->memory_stats();
  EXPECT_EQ(s.at("num_ooms"), 1);
  EXPECT_EQ(s.at("limit_num_ooms"), 1);
  EXPECT_EQ(s.at("requested_bytes.all.peak"), 8 * kMiB);
}

// ---- async: the CPU half (the GPU half is tests/gpu/test_async_allocator.cpp) ------------------------

TEST(AsyncAllocator, RefusesTheSimulatedDevice) {
  SimBackend dev(kGiB);
  try {
    static_cast<void>(make_async_allocator(dev, UINT64_MAX, {.name = "--allocator", .device = "--device"}));
    FAIL();
  } catch (const EnvironmentError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("needs a real GPU (cudaMallocAsync)"), std::string::npos) << what;
    // the advice names the flags as the caller spells them
    EXPECT_NE(what.find("(e.g. --allocator direct) or a CUDA device (--device cuda)"), std::string::npos)
        << what;
    EXPECT_NE(what.find("sim:1G"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace memstress
