#pragma once

#include <gtest/gtest.h>

#include "harness/memory/cuda_handles.hpp"

namespace memstress::testing {

// Base for tests that need a real GPU: on a machine without one they are skipped with that reason,
// and CTest (SKIP_REGULAR_EXPRESSION) reports them as skipped, never passed.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) {
      GTEST_SKIP() << "needs a CUDA device";
    }
  }
};

}  // namespace memstress::testing
