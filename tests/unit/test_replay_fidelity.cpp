// Fidelity: each committed PyTorch trace (results/traces/torch-2.11-h100), replayed through `caching`
// with PyTorch's defaults on a simulated device of the recording GPU's capacity, reproduces PyTorch's own
// reserved_bytes.all.peak within 2% and its allocated_bytes.all.peak within 1% (the numbers are read
// from the .pytorch.json beside each trace at test time). With the CUDA-like address order of the
// simulated device both match to the byte today (SimAddressOrder); the tolerances are the contract.

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "harness/alloc/factory.hpp"
#include "harness/memory/sim_backend.hpp"
#include "harness/replay/replay_trace.hpp"
#include "harness/replay/replayer.hpp"

namespace memstress::replay {
namespace {

const std::filesystem::path kTraces =
    std::filesystem::path(MEMSTRESS_SOURCE_DIR) / "results/traces/torch-2.11-h100";

double relative(std::int64_t ours, std::int64_t theirs) {
  return std::abs(static_cast<double>(ours - theirs)) / static_cast<double>(theirs);
}

class Fidelity : public ::testing::TestWithParam<const char*> {};

TEST_P(Fidelity, CachingReproducesPyTorchsPeaks) {
  const std::string name = GetParam();
  std::ifstream in(kTraces / (name + ".pytorch.json"));
  ASSERT_TRUE(in) << name;
  const nlohmann::json torch = nlohmann::json::parse(in);
  const auto stats = torch.at("memory_stats");
  const auto reserved = stats.at("reserved_bytes.all.peak").get<std::int64_t>();
  const auto allocated = stats.at("allocated_bytes.all.peak").get<std::int64_t>();
  const ReplayTrace trace = read_replay_trace(kTraces / (name + ".trace.csv.gz"));
  SimBackend sim(torch.at("gpu").at("total_memory").get<std::uint64_t>(), SimAddressOrder::cuda_like);
  const std::unique_ptr<Allocator> caching = make_allocator("caching", sim);
  const ReplayResult r = replay_trace(trace, *caching, {});
  RecordProperty("pytorch_reserved_peak", std::to_string(reserved));
  RecordProperty("replay_reserved_peak", std::to_string(r.peak_reserved));
  std::cout << name << ": reserved peak " << r.peak_reserved << " vs PyTorch's " << reserved
            << ", allocated peak " << r.peak_allocated << " vs " << allocated << "\n";
  EXPECT_LE(relative(r.peak_reserved, reserved), 0.02) << r.peak_reserved << " vs " << reserved;
  EXPECT_LE(relative(r.peak_allocated, allocated), 0.01) << r.peak_allocated << " vs " << allocated;
  // The recorded allocator's own segments add up to PyTorch's reserved peak: the trace is complete.
  ASSERT_TRUE(r.trace_peak_reserved.has_value());
  EXPECT_EQ(*r.trace_peak_reserved, reserved);
  EXPECT_EQ(r.num_ooms, 0);
  EXPECT_EQ(r.num_alloc_retries, stats.at("num_alloc_retries").get<std::int64_t>());
  EXPECT_EQ(r.counts.unknown_frees, 0U);
}

INSTANTIATE_TEST_SUITE_P(TorchTraces, Fidelity,
                         ::testing::Values("cnn_train", "kv_cache_infer", "multistream_loader",
                                           "transformer_train"));

}  // namespace
}  // namespace memstress::replay
