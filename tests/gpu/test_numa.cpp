#include <algorithm>
#include <cstddef>
#include <cstring>
#include <optional>
#include <vector>

#include "gpu_test.hpp"
#include "harness/alloc/host_memory_source.hpp"
#include "harness/alloc/pinned_host_allocator.hpp"
#include "harness/memory/host_buffers.hpp"
#include "harness/memory/numa.hpp"

namespace memstress {
namespace {

class NumaGpu : public testing::GpuTest {};

bool on(const std::vector<int>& nodes, std::optional<int> node) {
  return node && std::find(nodes.begin(), nodes.end(), *node) != nodes.end();
}

// Note [Host memory near the GPU]: once the policy is set, host memory made afterwards, page-locked by the
// pinned cache or locked with cudaHostRegister, lies on the GPU's node.
TEST_F(NumaGpu, HostMemoryMadeAfterPlacementLiesOnTheGpusNode) {
  const NearGpu near = place_near_gpu(0, NumaMode::local);
  const NumaPlacement& placement = near.placement;
  ASSERT_FALSE(placement.gpu_nodes.empty()) << placement.note;
  const HostTopology host;
  EXPECT_EQ(placement.gpu_nodes, host.gpu_nodes(0));
  if (placement.host_nodes > 1) {
    EXPECT_TRUE(placement.memory_placed) << placement.note;
  }
  constexpr std::size_t kBytes = std::size_t{64} << 20U;
  PinnedHostAllocator pinned(make_host_memory_source("cuda"));
  void* block = pinned.allocate(kBytes);
  std::memset(block, 1, kBytes);
  const std::optional<int> pinned_node = host.node_of(block, kBytes);
  ASSERT_TRUE(pinned_node.has_value()) << "the kernel does not say where cudaHostAlloc's pages lie";
  EXPECT_TRUE(on(placement.gpu_nodes, pinned_node)) << "pinned memory on node " << *pinned_node;
  pinned.deallocate(block);

  const RegisteredBuffer registered(kBytes);
  EXPECT_TRUE(on(placement.gpu_nodes, host.node_of(registered.data(), kBytes)));
}

// The policy is put back when the placement's restore ends: a test or a session leaves the thread as it found
// it.
TEST_F(NumaGpu, ThePlacementsPolicyIsPutBackWhenItsRestoreEnds) {
  const std::string before = thread_memory_policy();
  {
    const NearGpu near = place_near_gpu(0, NumaMode::local);
    if (!near.placement.memory_placed) {
      GTEST_SKIP() << "nothing placed: " << near.placement.note;
    }
    EXPECT_EQ(thread_memory_policy().rfind("bind ", 0), 0U) << thread_memory_policy();
  }
  EXPECT_EQ(thread_memory_policy(), before);
}

}  // namespace
}  // namespace memstress
