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

class Health final : public Workload {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "health"; }
  [[nodiscard]] std::string_view summary() const noexcept override {
    return "GPU health from NVML: ECC, retired/remapped rows, XIDs and throttling during the run, PCIe link "
           "vs "
           "its maximum, NVLink errors";
  }
  [[nodiscard]] std::vector<ParamSpec> params() const override {
    return {{"bytes",
             ParamType::bytes,
             {"64M"},
             {},
             {},
             "copied both ways over PCIe while the link is read",
             4096}};
  }
  [[nodiscard]] int max_repetitions() const noexcept override { return 1; }
  [[nodiscard]] bool in_default_job() const noexcept override { return false; }
  [[nodiscard]] std::unique_ptr<CaseRun> prepare(CaseContext& ctx) const override {
    return std::make_unique<HealthRun>(ctx);
  }
};

}  // namespace

std::unique_ptr<Workload> make_health() {
  return std::make_unique<Health>();
}

}  // namespace memstress::suites
