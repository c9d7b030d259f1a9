// health: the GPU's health as NVML reports it (harness/env/health.hpp, Note [Health figures]), one figure a
// metric, for acceptance profiles to judge in the DCGM spirit (ECC errors, retired and remapped rows, XID
// events during the run, the PCIe link against its maximum, NVLink errors, clock throttling during the run).
// On a real GPU the PCIe link is kept busy while it is read (copies both ways, verified on the device): an
// idle link may train down to save power, which is not a fault. On the simulated device the figures are the
// ones MEMSTRESS_INJECT_HEALTH gives (tests); without them the case is skipped with that reason.

#include "harness/env/health.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

#include "harness/alloc/allocator.hpp"
#include "harness/core/cuda_check.hpp"
#include "harness/memory/backend.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "harness/run/context.hpp"
#include "harness/run/workload.hpp"
#include "kernels/pattern.hpp"
#include "suites/registry.hpp"
#include "suites/support/blocks.hpp"

namespace memstress::suites {
namespace {

constexpr kernels::Pattern kPattern = kernels::Pattern::random;
constexpr int kRoundTrips =
    32;  // device -> host -> device (~80 ms of 64 MiB copies), while NVML reads the link

class HealthRun final : public CaseRun {
 public:
  explicit HealthRun(CaseContext& ctx) : watch_(ctx.health()), bytes_(ctx.params().bytes("bytes")) {
    if (watch_ == nullptr) {
      throw SkipCase(
          "no health source: NVML reads a real GPU's health; on the simulated device set "
          "MEMSTRESS_INJECT_HEALTH=FILE (harness/env/health.hpp)");
    }
    if (const std::string why = watch_->unavailable(); !why.empty()) {
      throw SkipCase(fmt::format("GPU health cannot be read: {}", why));
    }
    if (ctx.device().info().kind == BackendKind::cuda) {
      load_ = std::make_unique<Load>(bytes_);
    }
  }

  void iteration(CaseContext& ctx) override {
    const GpuHealth health =
        ctx.device().info().kind == BackendKind::cuda ? read_under_load(ctx) : watch_->read();
    for (const auto& [name, value] : health.figures) {
      const auto figures = health_figures();
      const auto f =
          std::find_if(figures.begin(), figures.end(), [&](const HealthFigure& x) { return x.name == name; });
      ctx.record(name, f == figures.end() ? "count" : f->unit,
                 f != figures.end() && f->lower_is_better ? Better::lower : Better::none, value);
    }
    notes_ = health;
  }

  void finish(CaseContext& ctx) override {
    for (const auto& [name, why] : notes_.not_measured) {
      ctx.note(not_measured_note(name, why));
    }
    for (const std::string& n : notes_.notes) {
      ctx.note(n);
    }
  }

 private:
  GpuHealth read_under_load(CaseContext& ctx) {
    const cudaStream_t s = load_->stream.get();
    const DeviceBlock src(ctx.allocator(), bytes_, StreamRef::from(s));
    const DeviceBlock dst(ctx.allocator(), bytes_, StreamRef::from(s));
    const std::uint64_t seed = ctx.seed() + static_cast<std::uint64_t>(ctx.iteration());
    kernels::fill(src.get(), bytes_, kPattern, seed, s);
    for (int i = 0; i < kRoundTrips; ++i) {
      MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(load_->host.data(), src.get(), bytes_, cudaMemcpyDeviceToHost, s));
      MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(dst.get(), load_->host.data(), bytes_, cudaMemcpyHostToDevice, s));
    }
    GpuHealth health = watch_->read();  // while the copies run
    const kernels::CheckResult result = load_->checker.check(dst.get(), bytes_, kPattern, seed, s);
    ctx.verified(result.checked_words, result.bad_words);
    return health;
  }

  // What keeps the link busy on a real GPU (none on the simulated device).
  struct Load {
    explicit Load(std::size_t bytes) : host(bytes) {}
    cuda::Stream stream;
    cuda::PinnedBuffer host;
    kernels::Checker checker;
  };

  HealthWatch* watch_;
  std::size_t bytes_;
  std::unique_ptr<Load> load_;
  GpuHealth notes_;
};

}  // namespace

WorkloadDef workloads::health() {
  return {
      .name = "health",
      .summary =
          "the GPU's health as DCGM's checks read it, one metric a figure: ECC errors "
          "(`ecc.volatile.uncorrected`, `.corrected`, `ecc.aggregate.*`), retired pages and remapped rows "
          "(pending, failed), XID events and clock-throttle time by cause since the run began (`xid.events`, "
          "`throttle.thermal_ms`, ...), hardware and thermal slowdown when read, the PCIe link's generation "
          "and width against their maximum while copies keep it busy (`pcie.gen_below_max`, "
          "`pcie.width_below_max`; the copies are checked on the device), NVLink's active links, its replay, "
          "recovery and CRC-flit errors (`nvlink.errors`) and, apart, its corrected data CRC and ECC counts "
          "(`nvlink.corrected`, and `nvlink.corrected_per_s`, the rate DCGM judges at 100 a second). A "
          "figure the GPU does not give is a `not measured: NAME (why)` note, and an acceptance check on it "
          "is skipped, not failed. Not in the default job: acceptance profiles run it",
      .needs = {.more = "NVML on a real GPU; on the simulated device, readings injected with "
                        "`MEMSTRESS_INJECT_HEALTH=FILE` for tests"},
      .axes =
          {
              {.name = "bytes",
               .type = ParamType::bytes,
               .defaults = {"64M"},
               .minimum = 4096,
               .help = "copied both ways over PCIe while the link is read"},
          },
      .max_repetitions = 1,
      .in_default_job = false,
      .prepare = [](CaseContext& ctx) -> std::unique_ptr<CaseRun> {
        return std::make_unique<HealthRun>(ctx);
      },
  };
}

}  // namespace memstress::suites
