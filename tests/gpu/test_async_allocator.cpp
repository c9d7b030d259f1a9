// The `async` peer (cudaMallocAsync on a pool of its own) on a real GPU.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "gpu_test.hpp"
#include "harness/alloc/async_allocator.hpp"
#include "harness/core/error.hpp"
#include "harness/memory/cuda_backend.hpp"

namespace memstress {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::uint64_t kKeepEverything = std::numeric_limits<std::uint64_t>::max();

class AsyncAllocatorTest : public testing::GpuTest {};

std::size_t count_not(const std::vector<unsigned char>& bytes, unsigned char value) {
  std::size_t bad = 0;
  for (const unsigned char b : bytes) {
    bad += b != value ? 1U : 0U;
  }
  return bad;
}

TEST_F(AsyncAllocatorTest, TwoStreamsWriteAndReadBack) {
  CudaBackend dev(0);
  auto alloc = make_async_allocator(dev, kKeepEverything, {});
  EXPECT_EQ(alloc->name(), "async");
  EXPECT_EQ(&alloc->backend(), &dev);
  const cuda::Stream s1;
  const cuda::Stream s2;
  const std::size_t bytes = 8 * kMiB + 3;
  void* a = alloc->allocate(bytes, StreamRef::from(s1.get()));
  void* b = alloc->allocate(bytes, StreamRef::from(s2.get()));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % 256, 0U);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b) % 256, 0U);
  ASSERT_EQ(cudaMemsetAsync(a, 0xab, bytes, s1.get()), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(b, 0xcd, bytes, s2.get()), cudaSuccess);
  std::vector<unsigned char> host_a(bytes);
  std::vector<unsigned char> host_b(bytes);
  ASSERT_EQ(cudaMemcpyAsync(host_a.data(), a, bytes, cudaMemcpyDeviceToHost, s1.get()), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(host_b.data(), b, bytes, cudaMemcpyDeviceToHost, s2.get()), cudaSuccess);
  s1.synchronize();
  s2.synchronize();
  EXPECT_EQ(count_not(host_a, 0xab), 0U);
  EXPECT_EQ(count_not(host_b, 0xcd), 0U);

  MemoryStats s = alloc->memory_stats();
  EXPECT_EQ(s.at("allocated_bytes.all.current"), 2 * bytes);
  EXPECT_GE(s.at("reserved_bytes.all.current"), 2 * bytes);
  EXPECT_GE(s.at("reserved_bytes.all.peak"), s.at("reserved_bytes.all.current"));
  alloc->deallocate(a);
  alloc->deallocate(b);
  s1.synchronize();
  s2.synchronize();
  s = alloc->memory_stats();
  EXPECT_EQ(s.at("allocated_bytes.all.current"), 0);
  EXPECT_EQ(s.at("allocated_bytes.all.peak"), 2 * bytes);
  EXPECT_EQ(s.at("allocated_bytes.all.freed"), 2 * bytes);
  EXPECT_EQ(s.at("num_ooms"), 0);
  alloc->reset_peak_stats();
  EXPECT_EQ(alloc->memory_stats().at("allocated_bytes.all.peak"), 0);
  int x = 0;
  EXPECT_THROW(alloc->deallocate(&x), InputError);
}

TEST_F(AsyncAllocatorTest, ZeroBytesIsNullptr) {
  CudaBackend dev(0);
  auto alloc = make_async_allocator(dev, kKeepEverything, {});
  EXPECT_EQ(alloc->allocate(0), nullptr);
  alloc->deallocate(nullptr);
  EXPECT_EQ(alloc->memory_stats().at("allocated_bytes.all.allocated"), 0);
}

TEST_F(AsyncAllocatorTest, RecordStreamDefersTheFreeToEveryStreamThatUsedIt) {
  CudaBackend dev(0);
  auto alloc = make_async_allocator(dev, kKeepEverything, {});
  const cuda::Stream s1;
  const cuda::Stream s2;
  const std::size_t bytes = 32 * kMiB;
  void* p = alloc->allocate(bytes, StreamRef::from(s1.get()));
  alloc->record_stream(p, StreamRef::from(s2.get()));
  alloc->record_stream(p, StreamRef::from(s2.get()));  // twice is once
  alloc->record_stream(p, StreamRef::from(s1.get()));  // its own stream: nothing to do
  ASSERT_EQ(cudaMemsetAsync(p, 0x5a, bytes, s2.get()), cudaSuccess);
  std::vector<unsigned char> host(bytes);
  ASSERT_EQ(cudaMemcpyAsync(host.data(), p, bytes, cudaMemcpyDeviceToHost, s2.get()), cudaSuccess);
  alloc->deallocate(p);  // enqueued after s2's memset and copy
  s2.synchronize();
  EXPECT_EQ(count_not(host, 0x5a), 0U);
  void* q = alloc->allocate(bytes, StreamRef::from(s1.get()));
  ASSERT_EQ(cudaMemsetAsync(q, 0, bytes, s1.get()), cudaSuccess);
  alloc->deallocate(q);
  s1.synchronize();
  EXPECT_EQ(alloc->memory_stats().at("allocated_bytes.all.current"), 0);
  int x = 0;
  EXPECT_THROW(alloc->record_stream(&x, StreamRef::from(s2.get())), InputError);
}

TEST_F(AsyncAllocatorTest, MemoryFreedOnOneStreamServesTheNext) {
  CudaBackend dev(0);
  auto alloc = make_async_allocator(dev, kKeepEverything, {});
  const cuda::Stream s1;
  void* a = alloc->allocate(64 * kMiB, StreamRef::from(s1.get()));
  alloc->deallocate(a);
  const std::int64_t reserved = alloc->memory_stats().at("reserved_bytes.all.current");
  void* b = alloc->allocate(64 * kMiB, StreamRef::from(s1.get()));  // stream order: no new memory
  EXPECT_EQ(alloc->memory_stats().at("reserved_bytes.all.current"), reserved);
  alloc->deallocate(b);
}

TEST_F(AsyncAllocatorTest, OutOfMemoryIsAnErrorAndTheAllocatorKeepsWorking) {
  CudaBackend dev(0);
  auto alloc = make_async_allocator(dev, kKeepEverything, {});
  const cuda::Stream s1;
  try {
    static_cast<void>(alloc->allocate(dev.info().capacity * 2, StreamRef::from(s1.get())));
    FAIL();
  } catch (const OutOfMemoryError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cuda:0: out of memory"), std::string::npos) << what;
    EXPECT_NE(what.find("async allocator"), std::string::npos) << what;
    EXPECT_NE(what.find(" free;"), std::string::npos) << what;
  }
  const MemoryStats s = alloc->memory_stats();
  EXPECT_EQ(s.at("num_ooms"), 1);
  EXPECT_EQ(s.at("num_alloc_retries"), 1);
  void* p = alloc->allocate(kMiB, StreamRef::from(s1.get()));  // no stale error
  ASSERT_EQ(cudaMemsetAsync(p, 0, kMiB, s1.get()), cudaSuccess);
  alloc->deallocate(p);
  s1.synchronize();
}

TEST_F(AsyncAllocatorTest, ZeroReleaseThresholdAndEmptyCacheTrimTheReservation) {
  CudaBackend dev(0);
  auto alloc = make_async_allocator(dev, 0, {});
  const cuda::Stream s1;
  void* p = alloc->allocate(256 * kMiB, StreamRef::from(s1.get()));
  EXPECT_GE(alloc->memory_stats().at("reserved_bytes.all.current"), 256 * kMiB);
  alloc->deallocate(p);
  alloc->empty_cache();
  const MemoryStats s = alloc->memory_stats();
  EXPECT_EQ(s.at("reserved_bytes.all.current"), 0);
  EXPECT_GE(s.at("reserved_bytes.all.peak"), 256 * kMiB);
  alloc->reset_peak_stats();
  EXPECT_EQ(alloc->memory_stats().at("reserved_bytes.all.peak"), 0);
}

TEST_F(AsyncAllocatorTest, KeepEverythingHoldsMemoryUntilEmptyCache) {
  CudaBackend dev(0);
  auto alloc = make_async_allocator(dev, kKeepEverything, {});
  const cuda::Stream s1;
  void* p = alloc->allocate(256 * kMiB, StreamRef::from(s1.get()));
  alloc->deallocate(p);
  s1.synchronize();  // a synchronization releases nothing above an unlimited threshold
  EXPECT_GE(alloc->memory_stats().at("reserved_bytes.all.current"), 256 * kMiB);
  alloc->empty_cache();
  EXPECT_EQ(alloc->memory_stats().at("reserved_bytes.all.current"), 0);
}

TEST_F(AsyncAllocatorTest, DestructionFreesWhatIsStillLive) {
  CudaBackend dev(0);
  const std::uint64_t before = dev.mem_info().free;
  {
    auto alloc = make_async_allocator(dev, kKeepEverything, {});
    static_cast<void>(alloc->allocate(512 * kMiB));  // leaked on purpose: the destructor warns
  }
  EXPECT_GE(dev.mem_info().free + 64 * kMiB, before);
}

}  // namespace
}  // namespace memstress
