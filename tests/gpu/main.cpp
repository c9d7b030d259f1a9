// The GPU tests' main: gtest's, behind Note [One GPU for the GPU tests].
//
// Note [One GPU for the GPU tests]. Every process that initialises CUDA sets up every GPU it can see, and
// on a node of several GPUs that is much of what a short GPU test spends: on 4 H200s the median GPU test took
// 1.3 s, on one H100 0.33 s, and the GPU tests, which run one at a time, added up to minutes. All
// but the peer tests use one GPU (cuda:0), so where the caller has not chosen the GPUs (no
// CUDA_VISIBLE_DEVICES), the process shows CUDA only the first; MEMSTRESS_GPU_TESTS_EVERY_GPU=1 (set by
// CTest on the P2pTest cases, tests/CMakeLists.txt, and by scripts/lab/gpu-sanitize) keeps every GPU in view:
// a direct run of this binary without it sees one GPU, and the peer tests skip with "needs 2 GPUs". Set
// before CUDA is first called: the runtime reads the variable once, when it initialises.

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
