// smoke: the whole path on a real GPU — allocate through the shared allocator, fill with a verifiable
// pattern and check it on the device, time each step, report.

#include <fmt/format.h>

#include "harness/alloc/allocator.hpp"
#include "harness/core/units.hpp"
#include "harness/run/context.hpp"
#include "harness/run/timing.hpp"
#include "harness/run/workload.hpp"
#include "kernels/pattern.hpp"
#include "suites/registry.hpp"

namespace memstress::suites {
namespace {

constexpr std::uint64_t kSpinNs = 50'000;  // keeps launch overhead out of the timed kernels

class SmokeRun final : public CaseRun {
 public:
  explicit SmokeRun(const CaseContext& ctx)
      : bytes_(ctx.params().bytes("bytes")),
        pattern_(kernels::parse_pattern(ctx.params().text("pattern"), "pattern")) {}

  void iteration(CaseContext& ctx) override {
    Allocator& allocator = ctx.allocator();
    const cudaStream_t s = stream_.get();
    const std::uint64_t seed = ctx.seed() + static_cast<std::uint64_t>(ctx.iteration());

    const HostTimer alloc_timer;
    void* buffer = allocator.allocate(bytes_, StreamRef::from(s));
    const double alloc_s = alloc_timer.seconds();
    try {
      kernels::spin(kSpinNs, s);
      fill_timer_.start(s);
      kernels::fill(buffer, bytes_, pattern_, seed, s);
      fill_timer_.stop(s);
      checker_.enqueue(buffer, bytes_, pattern_, seed, s, check_timer_.start_event(),
                       check_timer_.stop_event());
      const kernels::CheckResult result = checker_.wait();
      ctx.verified(result.checked_words, result.bad_words);
      if (!result.ok()) {
        ctx.note(fmt::format("repetition {}: {} bad words, the first at byte offset {}", ctx.iteration(),
                             result.bad_words, result.first_bad_word * 8));
      }
      ctx.record("alloc", "us", Better::lower, alloc_s * 1e6);
      ctx.record("fill", "GB/s", Better::higher,
                 gb_per_s(static_cast<double>(bytes_), fill_timer_.seconds()));
      ctx.record("check", "GB/s", Better::higher,
                 gb_per_s(static_cast<double>(bytes_), check_timer_.seconds()));
    } catch (...) {
      allocator.deallocate(buffer);
      throw;
    }
    const HostTimer free_timer;
    allocator.deallocate(buffer);
    ctx.record("free", "us", Better::lower, free_timer.seconds() * 1e6);
  }

 private:
  std::uint64_t bytes_;
  kernels::Pattern pattern_;
  cuda::Stream stream_;
  kernels::Checker checker_;
  DeviceTimer fill_timer_;
  DeviceTimer check_timer_;
};

}  // namespace

WorkloadDef workloads::smoke() {
  std::vector<std::string> patterns;
  for (const kernels::Pattern p : kernels::all_patterns()) {
    patterns.emplace_back(kernels::to_string(p));
  }
  return {
      .name = "smoke",
      .summary =
          "allocate through the shared allocator, fill with a verifiable pattern (from seed and index), "
          "check it on the device, report alloc/free latency and fill/check GB/s",
      .needs = {.real_gpu = true},
      .axes =
          {
              {.name = "bytes",
               .type = ParamType::bytes,
               .defaults = {"64M", "1G"},
               .full_defaults = {"1M", "64M", "1G", "4G"},
               .minimum = 16,
               .help = "buffer size"},
              {.name = "pattern",
               .type = ParamType::choice,
               .defaults = {"random"},
               .full_defaults = patterns,
               .choices = patterns,
               .help = "data pattern written and checked"},
          },
      .headline = {"fill"},
      .measures_bandwidth = true,
      .prepare = [](CaseContext& ctx) -> std::unique_ptr<CaseRun> { return std::make_unique<SmokeRun>(ctx); },
  };
}

}  // namespace memstress::suites
