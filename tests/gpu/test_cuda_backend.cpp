#include <cuda_runtime_api.h>

#include "gpu_test.hpp"
#include "harness/alloc/direct_allocator.hpp"
#include "harness/core/error.hpp"
#include "harness/memory/cuda_backend.hpp"
#include "harness/memory/driver_api.hpp"

namespace memstress {
namespace {

class CudaBackendTest : public testing::GpuTest {};

TEST_F(CudaBackendTest, DescribesTheDevice) {
  CudaBackend dev(0);
  EXPECT_TRUE(dev.has_memory());
  EXPECT_EQ(dev.info().label(), "cuda:0");
  EXPECT_EQ(dev.info().uuid.rfind("GPU-", 0), 0U) << dev.info().uuid;
  EXPECT_EQ(dev.info().uuid.size(), 40U);
  const MemInfo mem = dev.mem_info();
  EXPECT_EQ(mem.total, dev.info().capacity);
  EXPECT_GT(mem.free, 0U);
  EXPECT_LE(mem.free, mem.total);
}

// Suite WholeGpu (label gpu-whole): it judges the device's free memory, which compute-sanitizer shares.
using testing::WholeGpu;

TEST_F(WholeGpu, ReserveChargesTheDeviceAndReleaseReturnsIt) {
  CudaBackend dev(0);
  const std::uint64_t before = dev.mem_info().free;
  void* p = dev.try_reserve(std::size_t{1} << 30);
  ASSERT_NE(p, nullptr);
  EXPECT_LE(dev.mem_info().free, before - (std::uint64_t{1} << 30));
  dev.release(p, std::size_t{1} << 30);
  EXPECT_GE(dev.mem_info().free + (std::uint64_t{64} << 20), before);
}

TEST_F(CudaBackendTest, OutOfMemoryIsNullAndTheContextSurvives) {
  CudaBackend dev(0);
  EXPECT_EQ(dev.try_reserve(dev.info().capacity * 2), nullptr);
  void* p = dev.try_reserve(4096);  // the next call must not see a stale error
  EXPECT_NE(p, nullptr);
  dev.release(p, 4096);
  DirectAllocator alloc(dev);
  EXPECT_THROW(static_cast<void>(alloc.allocate(dev.info().capacity * 2)), OutOfMemoryError);
}

TEST_F(CudaBackendTest, DriverApiResolvesThroughTheRuntime) {
  const DriverApi& api = driver_api();
  EXPECT_TRUE(api.complete());
  int version = 0;
  MEMSTRESS_CU_TRY(api.driver_get_version(&version));
  EXPECT_GE(version, 12000);
  int runtime_view = 0;
  ASSERT_EQ(cudaDriverGetVersion(&runtime_view), cudaSuccess);
  EXPECT_EQ(version, runtime_view);
  // An invalid call raises ApiError carrying the driver's own name for the error.
  try {
    MEMSTRESS_CU_TRY(api.device_get_attribute(&version, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 9999));
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code_name(), "CUDA_ERROR_INVALID_DEVICE") << e.what();
  }
}

}  // namespace
}  // namespace memstress
