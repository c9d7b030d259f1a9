// The smoke and alloc-smoke workloads end to end on a real GPU, through the harness.

#include "gpu_test.hpp"
#include "harness/alloc/direct_allocator.hpp"
#include "harness/memory/cuda_backend.hpp"
#include "harness/results/sink.hpp"
#include "harness/run/runner.hpp"
#include "suites/registry.hpp"

namespace memstress {
namespace {

class SmokeTest : public testing::GpuTest {};

TEST_F(SmokeTest, SmokeWorkloadsPassWithDataVerifiedOnTheDevice) {
  CudaBackend dev(0);
  DirectAllocator alloc(dev);
  const Registry registry = suites::builtin_registry();
  PlanRequest request;
  request.workloads = {"smoke", "alloc-smoke"};
  request.overrides = {ParamOverride::parse("smoke.bytes=64M,1G", "-p"),
                       ParamOverride::parse("smoke.pattern=random,address", "-p")};
  const auto cases = plan_cases(registry, request);
  ResultSink sink(RunRecord{}, std::nullopt, "");
  RunOptions opt;
  opt.repetitions = 3;
  opt.quiet = true;
  EXPECT_EQ(Runner(alloc, opt).run(cases, sink), 0);
  for (const Row& row : sink.full_rows()) {  // samples included
    EXPECT_EQ(row.verdict, Verdict::pass) << row.workload << " " << row.case_label() << ": " << row.reason;
    EXPECT_GT(row.checked, 0U);
    EXPECT_EQ(row.errors, 0U);
    if (row.workload == "smoke") {
      const MetricResult* fill = row.metric("fill");
      ASSERT_NE(fill, nullptr);
      EXPECT_EQ(fill->samples.size(), 3U);
      EXPECT_EQ(row.checked, (row.params[0].second == "64M" ? 8U << 20 : 128U << 20) * 4);  // warm-up + 3
    }
  }
  EXPECT_EQ(dev.mem_info().total, dev.info().capacity);
  EXPECT_EQ(alloc.memory_stats().at("allocated_bytes.all.current"), 0);
}

}  // namespace
}  // namespace memstress
