#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "gpu_test.hpp"
#include "harness/alloc/cuda_host_memory_source.hpp"
#include "harness/alloc/pinned_host_allocator.hpp"
#include "harness/core/cuda_check.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "kernels/pattern.hpp"

namespace memstress {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::uint64_t kSpinNs = 50'000'000;  // 50 ms: far longer than the host needs for the checks

class PinnedHostAllocatorGpu : public testing::GpuTest {};

// True while work is still queued on the stream (and clears the not-ready status).
bool busy(const cuda::Stream& stream) {
  const cudaError_t status = cudaStreamQuery(stream.get());
  if (status == cudaErrorNotReady) {
    static_cast<void>(cudaGetLastError());
    return true;
  }
  MEMSTRESS_CUDA_TRY(status);
  return false;
}

std::uint64_t word(std::uint64_t seed, std::size_t index) {
  std::uint64_t z = seed + (static_cast<std::uint64_t>(index) + 1) * 0x9E3779B97F4A7C15ULL;  // splitmix64
  z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31U);
}

TEST_F(PinnedHostAllocatorGpu, BlocksArePinnedAndMapped) {
  PinnedHostAllocator alloc(make_host_memory_source("cuda"));
  EXPECT_TRUE(alloc.pinned());
  EXPECT_EQ(alloc.source_name(), "cuda");
  void* p = alloc.allocate(5000);
  cudaPointerAttributes attributes{};
  MEMSTRESS_CUDA_TRY(cudaPointerGetAttributes(&attributes, p));
  EXPECT_EQ(attributes.type, cudaMemoryTypeHost);
  EXPECT_NE(attributes.devicePointer, nullptr);  // mapped: kernels may read it
  alloc.deallocate(p);

  std::vector<std::byte> pageable(5000);
  MEMSTRESS_CUDA_TRY(cudaPointerGetAttributes(&attributes, pageable.data()));
  EXPECT_EQ(attributes.type, cudaMemoryTypeUnregistered);  // for contrast
}

TEST_F(PinnedHostAllocatorGpu, BlockIsNotReusedBeforeItsStreamPassesIt) {
  PinnedHostAllocator alloc(make_host_memory_source("cuda"));
  cuda::Stream stream;
  const cuda::DeviceBuffer device(kMiB);
  void* a = alloc.allocate(kMiB);
  kernels::spin(kSpinNs, stream.get());
  MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(device.data(), a, kMiB, cudaMemcpyHostToDevice, stream.get()));
  alloc.record_stream(a, StreamRef::from(stream.get()));
  alloc.deallocate(a);  // at once, as a dataloader does
  EXPECT_EQ(alloc.memory_stats().at("pending_free_bytes"), kMiB);

  void* b = alloc.allocate(kMiB - 1);  // the same class, while the copy from `a` is still queued
  ASSERT_TRUE(busy(stream)) << "the stream finished before the check; the test proves nothing";
  EXPECT_NE(b, a);

  stream.synchronize();
  void* c = alloc.allocate(kMiB);  // the stream has passed `a`: it comes back
  EXPECT_EQ(c, a);
  EXPECT_EQ(alloc.memory_stats().at("pending_free_bytes"), 0);
  alloc.deallocate(b);
  alloc.deallocate(c);
}

TEST_F(PinnedHostAllocatorGpu, BlockWaitsForEveryStreamThatUsedIt) {
  PinnedHostAllocator alloc(make_host_memory_source("cuda"));
  cuda::Stream slow;
  cuda::Stream fast;
  const cuda::DeviceBuffer device(2 * kMiB);
  auto* a = static_cast<std::byte*>(alloc.allocate(2 * kMiB));
  kernels::spin(kSpinNs, slow.get());
  MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(device.data(), a, kMiB, cudaMemcpyHostToDevice, slow.get()));
  MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(static_cast<std::byte*>(device.data()) + kMiB, a + kMiB, kMiB,
                                     cudaMemcpyHostToDevice, fast.get()));
  alloc.record_stream(a, StreamRef::from(slow.get()));
  alloc.record_stream(a, StreamRef::from(fast.get()));
  alloc.deallocate(a);
  fast.synchronize();
  void* b = alloc.allocate(2 * kMiB);  // `fast` has passed it, `slow` has not
  ASSERT_TRUE(busy(slow)) << "the slow stream finished before the check; the test proves nothing";
  EXPECT_NE(b, a);
  slow.synchronize();
  void* c = alloc.allocate(2 * kMiB);
  EXPECT_EQ(c, a);
  alloc.deallocate(b);
  alloc.deallocate(c);
}

TEST_F(PinnedHostAllocatorGpu, EventsArePooled) {
  auto source = std::make_unique<CudaHostMemorySource>();
  const CudaHostMemorySource& events = *source;
  PinnedHostAllocator alloc(std::move(source));
  cuda::Stream stream;
  const cuda::DeviceBuffer device(64 * 1024);
  for (int i = 0; i < 100; ++i) {
    void* p = alloc.allocate(64 * 1024);
    MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(device.data(), p, 64 * 1024, cudaMemcpyHostToDevice, stream.get()));
    alloc.record_stream(p, StreamRef::from(stream.get()));
    alloc.record_stream(p, StreamRef{});  // the legacy default stream
    alloc.deallocate(p);
    stream.synchronize();
    MEMSTRESS_CUDA_TRY(cudaDeviceSynchronize());
  }
  // Each deallocate takes two events; they go back to the pool when the block is reused.
  EXPECT_LE(events.events_created(), 4U);
  const MemoryStats stats = alloc.memory_stats();
  EXPECT_EQ(stats.at("num_host_alloc"), 1);
  EXPECT_EQ(stats.at("num_cache_hits"), 99);
}

TEST_F(PinnedHostAllocatorGpu, RoundTripThroughPinnedBlocksPreservesData) {
  constexpr std::size_t kBytes = 8 * kMiB + 24;  // not a whole class
  constexpr std::size_t kWords = kBytes / sizeof(std::uint64_t);
  PinnedHostAllocator alloc(make_host_memory_source("cuda"));
  cuda::Stream stream;
  const cuda::DeviceBuffer device(kBytes);
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {  // later rounds run on the cached blocks
    auto* out = static_cast<std::uint64_t*>(alloc.allocate(kBytes));
    auto* back = static_cast<std::uint64_t*>(alloc.allocate(kBytes));
    const std::span<std::uint64_t> sent(out, kWords);
    const std::span<std::uint64_t> received(back, kWords);
    for (std::size_t i = 0; i < kWords; ++i) {
      sent[i] = word(seed, i);
      received[i] = 0;
    }
    MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(device.data(), out, kBytes, cudaMemcpyHostToDevice, stream.get()));
    MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(back, device.data(), kBytes, cudaMemcpyDeviceToHost, stream.get()));
    alloc.record_stream(out, StreamRef::from(stream.get()));
    alloc.deallocate(out);  // before the copies finish: the cache must not hand it out meanwhile
    stream.synchronize();
    std::size_t bad = 0;
    for (std::size_t i = 0; i < kWords; ++i) {
      if (received[i] != word(seed, i)) {
        ++bad;
      }
    }
    EXPECT_EQ(bad, 0U) << "round " << seed;
    alloc.deallocate(back);
  }
  const MemoryStats stats = alloc.memory_stats();
  EXPECT_EQ(stats.at("num_host_alloc"), 2);
  EXPECT_EQ(stats.at("num_cache_hits"), 4);
}

}  // namespace
}  // namespace memstress
