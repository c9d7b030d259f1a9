#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>

#include "harness/memory/cuda_handles.hpp"

namespace memstress::testing {

// Base for tests that need a real GPU: on a machine without one they are skipped with that reason,
// and CTest (SKIP_REGULAR_EXPRESSION) reports them as skipped, never passed. GPU CI sets
// MEMSTRESS_REQUIRE_GPU=1: there a missing GPU fails every such test instead.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) {
      const char* require =
          std::getenv("MEMSTRESS_REQUIRE_GPU");  // NOLINT(concurrency-mt-unsafe): one thread
      if (require != nullptr && std::string_view(require) == "1") {
        GTEST_FAIL() << "MEMSTRESS_REQUIRE_GPU=1: no CUDA device found";
      }
      GTEST_SKIP() << "needs a CUDA device";
    }
  }
};

// Suite WholeGpu, label `gpu-whole` (tests/CMakeLists.txt): tests that fill the GPU or judge its free memory
// as a whole. compute-sanitizer takes device memory of its own (initcheck's tracking: 67 MB on an H100), so
// scripts/lab/gpu-sanitize leaves them out by that label.
class WholeGpu : public GpuTest {};

// scripts/lab/gpu-sanitize sets MEMSTRESS_SANITIZER_SIZES=1 for the GPU test binary. The few tests whose full
// sizes cannot finish under compute-sanitizer (racecheck's host-side tracking of 32 streams x 100 operations
// grew past 128 GiB; every NCCL collective at 64 MiB ran past 9 minutes) then run the same cases, with the
// same checks, at the smaller sizes given here. Everywhere else (ctest, GPU CI) they run at full size.
inline bool sanitizer_sizes() {
  const char* v = std::getenv("MEMSTRESS_SANITIZER_SIZES");  // NOLINT(concurrency-mt-unsafe): one thread
  return v != nullptr && std::string_view(v) == "1";
}

}  // namespace memstress::testing
