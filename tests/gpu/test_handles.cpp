#include <cuda_runtime_api.h>

#include <cstring>
#include <utility>

#include "gpu_test.hpp"
#include "harness/core/cuda_check.hpp"
#include "harness/core/error.hpp"

namespace memstress {
namespace {

class HandlesTest : public testing::GpuTest {};

TEST_F(HandlesTest, MovedHandlesOwnOnce) {
  cuda::Stream a;
  const cudaStream_t raw = a.get();
  cuda::Stream b(std::move(a));
  EXPECT_EQ(b.get(), raw);
  EXPECT_EQ(a.get(), nullptr);  // NOLINT(bugprone-use-after-move): checking the moved-from state
  cuda::DeviceBuffer d(1024);
  cuda::DeviceBuffer e;
  e = std::move(d);
  EXPECT_EQ(e.size(), 1024U);
  EXPECT_EQ(d.data(), nullptr);  // NOLINT(bugprone-use-after-move)
}

TEST_F(HandlesTest, PinnedRoundTripAndEventTiming) {
  cuda::Stream stream;
  const cuda::PinnedBuffer host(1 << 20);
  const cuda::DeviceBuffer dev(1 << 20);
  std::memset(host.data(), 0x5a, host.size());
  MEMSTRESS_CUDA_TRY(
      cudaMemcpyAsync(dev.data(), host.data(), host.size(), cudaMemcpyHostToDevice, stream.get()));
  stream.synchronize();
  std::memset(host.data(), 0, host.size());
  const cuda::Event start;
  const cuda::Event stop;
  start.record(stream.get());
  MEMSTRESS_CUDA_TRY(
      cudaMemcpyAsync(host.data(), dev.data(), host.size(), cudaMemcpyDeviceToHost, stream.get()));
  stop.record(stream.get());
  stop.synchronize();
  EXPECT_TRUE(stop.query());
  EXPECT_GT(cuda::Event::elapsed_ms(start, stop), 0.0F);
  EXPECT_EQ(host.as<unsigned char>()[12345], 0x5a);
}

TEST_F(HandlesTest, ScopedDeviceRestores) {
  int before = -1;
  ASSERT_EQ(cudaGetDevice(&before), cudaSuccess);
  {
    const cuda::ScopedDevice scoped(0);
    int now = -1;
    ASSERT_EQ(cudaGetDevice(&now), cudaSuccess);
    EXPECT_EQ(now, 0);
  }
  int after = -1;
  ASSERT_EQ(cudaGetDevice(&after), cudaSuccess);
  EXPECT_EQ(after, before);
}

TEST_F(HandlesTest, CheckMacroCarriesCallFileAndLine) {
  try {
    MEMSTRESS_CUDA_TRY(cudaSetDevice(12345));
    FAIL();
  } catch (const ApiError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code_name(), "cudaErrorInvalidDevice");
    EXPECT_NE(what.find("cudaSetDevice(12345)"), std::string::npos) << what;
    EXPECT_NE(what.find("test_handles.cpp"), std::string::npos) << what;
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // cleared
}

}  // namespace
}  // namespace memstress
