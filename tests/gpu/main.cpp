// The GPU tests' main: gtest's, behind Note [One GPU for the GPU tests].
//
// Note [One GPU for the GPU tests]. Every process that initialises CUDA sets up every GPU it can see, and
// on a node of several GPUs that is what a short GPU test spends most of its time on: on 4 H200s a test of
// a few milliseconds took a second, and the GPU tests, which run one at a time, added up to minutes. All
// but the peer tests use one GPU (cuda:0), so where the caller has not chosen the GPUs (no
// CUDA_VISIBLE_DEVICES), the process shows CUDA only the first; MEMSTRESS_GPU_TESTS_EVERY_GPU=1 (set by
// CTest on the P2pTest cases, tests/CMakeLists.txt) keeps every GPU in view. Set before CUDA is first
// called: the runtime reads the variable once, when it initialises.

#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>

int main(int argc, char** argv) {
  const char* every = std::getenv("MEMSTRESS_GPU_TESTS_EVERY_GPU");
  if (std::getenv("CUDA_VISIBLE_DEVICES") == nullptr &&
      (every == nullptr || std::string_view(every) != "1")) {
    setenv("CUDA_VISIBLE_DEVICES", "0", 0);  // NOLINT(concurrency-mt-unsafe): before any thread starts
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
