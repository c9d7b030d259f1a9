// The allocator conformance checks with real memory: every live block is filled with its own pattern
// on the device and verified when it is freed, so two live blocks that overlapped would corrupt each
// other and fail here. Plus the stream hazard record_stream exists for, and OOM recovery.

#include <cuda_runtime_api.h>

#include <map>
#include <random>
#include <vector>

#include "gpu_test.hpp"
#include "harness/alloc/factory.hpp"
#include "harness/core/error.hpp"
#include "harness/memory/cuda_backend.hpp"
#include "kernels/pattern.hpp"

namespace memstress {
namespace {

using kernels::Pattern;

class AllocatorOnGpu : public testing::GpuTest, public ::testing::WithParamInterface<std::string> {
 protected:
  std::unique_ptr<Allocator> make(DeviceBackend& dev) {
    return make_allocator(std::string_view(GetParam()), dev);
  }
};

TEST_P(AllocatorOnGpu, LiveBlocksNeverOverlapWithDataVerified) {
  CudaBackend dev(0);
  auto alloc = make(dev);
  const std::vector<cuda::Stream> streams(2);
  kernels::Checker checker;
  struct Live {
    void* ptr;
    std::size_t bytes;
    std::uint64_t seed;
    cudaStream_t stream;
  };
  std::vector<Live> live;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> log_size(9.0, 26.0);  // 512 B .. 64 MiB
  std::uint64_t errors = 0;
  const auto release = [&](std::size_t i) {
    const Live b = live[i];
    errors += checker.check(b.ptr, b.bytes, Pattern::random, b.seed, b.stream).bad_words;
    alloc->deallocate(b.ptr);
    live[i] = live.back();
    live.pop_back();
  };
  for (int op = 0; op < 600; ++op) {
    if (live.empty() || rng() % 100 < 55) {
      const auto bytes = static_cast<std::size_t>(std::exp2(log_size(rng))) / 16 * 16 + 16;
      const cudaStream_t s = streams[rng() % 2].get();
      void* p = alloc->allocate(bytes, StreamRef::from(s));
      const std::uint64_t seed = rng();
      kernels::fill(p, bytes, Pattern::random, seed, s);
      live.push_back({p, bytes, seed, s});
    } else {
      release(rng() % live.size());
    }
  }
  while (!live.empty()) {
    release(live.size() - 1);
  }
  EXPECT_EQ(errors, 0U);
  EXPECT_EQ(alloc->memory_stats().at("allocated_bytes.all.current"), 0);
}

TEST_P(AllocatorOnGpu, OutOfMemoryIsReportedAndTheAllocatorRecovers) {
  CudaBackend dev(0);
  auto alloc = make(dev);
  EXPECT_THROW(static_cast<void>(alloc->allocate(dev.info().capacity * 2)), OutOfMemoryError);
  cuda::Stream s;
  void* p = alloc->allocate(64 << 20, StreamRef::from(s.get()));
  kernels::Checker checker;
  kernels::fill(p, 64 << 20, Pattern::address, 3, s.get());
  EXPECT_TRUE(checker.check(p, 64 << 20, Pattern::address, 3, s.get()).ok());
  alloc->deallocate(p);
}

INSTANTIATE_TEST_SUITE_P(Peers, AllocatorOnGpu, ::testing::Values("caching", "expandable", "direct", "async"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           return param_info.param;
                         });

class RecordStreamOnGpu : public testing::GpuTest, public ::testing::WithParamInterface<std::string> {};

// A buffer freed on one stream while a kernel on another still writes it must not be handed out again
// until that kernel is done: if it were, the late kernel would overwrite the new owner's data.
TEST_P(RecordStreamOnGpu, BufferStillWrittenOnAnotherStreamIsNotReused) {
  CudaBackend dev(0);
  auto alloc = make_allocator(std::string_view(GetParam()), dev);
  cuda::Stream s1;
  cuda::Stream s2;
  constexpr std::size_t kBytes = 32 << 20;
  kernels::Checker checker;
  void* p = alloc->allocate(kBytes, StreamRef::from(s1.get()));
  kernels::spin(50'000'000, s2.get());  // 50 ms of other work first
  kernels::fill(p, kBytes, Pattern::random, 111, s2.get());
  alloc->record_stream(p, StreamRef::from(s2.get()));
  alloc->deallocate(p);
  void* q = alloc->allocate(kBytes, StreamRef::from(s1.get()));
  EXPECT_NE(q, p) << "handed out while still in use on another stream";
  kernels::fill(q, kBytes, Pattern::random, 222, s1.get());
  s2.synchronize();
  EXPECT_TRUE(checker.check(q, kBytes, Pattern::random, 222, s1.get()).ok());
  // Once s2 has passed it, the cached block is reused (q is still held, so p is the only candidate).
  void* r = alloc->allocate(kBytes, StreamRef::from(s1.get()));
  EXPECT_EQ(r, p);
  alloc->deallocate(q);
  alloc->deallocate(r);
}

INSTANTIATE_TEST_SUITE_P(Caching, RecordStreamOnGpu, ::testing::Values("caching", "expandable"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           return param_info.param;
                         });

}  // namespace
}  // namespace memstress
