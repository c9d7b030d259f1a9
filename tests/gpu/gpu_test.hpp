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
// scripts/gpu-sanitize leaves them out by that label.
class WholeGpu : public GpuTest {};

}  // namespace memstress::testing
