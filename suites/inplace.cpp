// inplace: an elementwise chain in place vs out of place, as eager frameworks run it.
//
// Note [The chain]. One round is  x = a * x;  x = a * x + y;  x = relu(x);  x = float(bf16(x))  over n fp32
// elements, one kernel per op, repeated `rounds` times. In place, every op writes back into x: the live
// memory is x and y. Out of place, every op allocates its output from the shared allocator on the stream
// and the input temporary is freed as soon as the next op is enqueued (the caller's x and y stay), as
// PyTorch's eager mode frees a tensor whose last reference dies; the cast goes through a real bf16 tensor
// (half the bytes) and back. Both run on one stream, so stream order keeps every free safe.
//
// Note [What is measured and verified]. Per repetition: each mode's device time and its bandwidth (the
// bytes its kernels read and wrote / time) against the device-to-device ceiling measured in the same
// repetition (cudaMemcpyAsync of the same n x 4 bytes between two blocks, counting read and write), and
// each mode's peak allocated bytes over its own run, relative to the 2 x n x 4 bytes of x and y. Every
// repetition compares the two results word for word with each other and with a fused reference kernel
// (the whole chain per element in registers): the ops are explicitly rounded, so all three agree bit for
// bit unless memory was corrupted or reused too early.

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>

#include "harness/alloc/allocator.hpp"
#include "harness/core/cuda_check.hpp"
#include "harness/core/units.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "harness/run/context.hpp"
#include "harness/run/timing.hpp"
#include "harness/run/workload.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/pattern.hpp"
#include "suites/registry.hpp"
#include "suites/support/blocks.hpp"

namespace memstress::suites {
namespace {

constexpr std::uint64_t kSpinNs = 50'000;
constexpr float kA = 0.75F;

std::int64_t stat(const MemoryStats& stats, std::string_view key) {
  const auto it = stats.find(key);
  return it == stats.end() ? 0 : it->second;
}

class InplaceRun final : public CaseRun {
 public:
  explicit InplaceRun(CaseContext& ctx)
      : allocator_(ctx.allocator()),
        n_(ctx.params().bytes("bytes") / sizeof(float)),
        bytes_(n_ * sizeof(float)),
        rounds_(static_cast<int>(ctx.params().integer("rounds"))),
        x_(allocator_, bytes_, here()),
        y_(allocator_, bytes_, here()),
        work_(allocator_, bytes_, here()),
        reference_(allocator_, bytes_, here()),
        copy_(allocator_, bytes_, here()) {}

  void iteration(CaseContext& ctx) override {
    const cudaStream_t s = stream_.get();
    const std::uint64_t seed = ctx.seed() + static_cast<std::uint64_t>(ctx.iteration());
    kernels::init_uniform(x_.as<float>(), n_, seed, s);
    kernels::init_uniform(y_.as<float>(), n_, ~seed, s);
    kernels::chain_reference(reference_.as<float>(), x_.as<float>(), y_.as<float>(), kA, rounds_, n_, s);

    // The ceiling: one device-to-device copy of x.
    kernels::spin(kSpinNs, s);
    timer_.start(s);
    MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(copy_.get(), x_.get(), bytes_, cudaMemcpyDeviceToDevice, s));
    timer_.stop(s);
    const double d2d = gb_per_s(2.0 * static_cast<double>(bytes_), timer_.seconds());

    // In place, on a copy of x (x itself feeds the out-of-place run).
    MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(work_.get(), x_.get(), bytes_, cudaMemcpyDeviceToDevice, s));
    const std::int64_t base = settle_peak();
    kernels::spin(kSpinNs, s);
    timer_.start(s);
    for (int r = 0; r < rounds_; ++r) {
      float* w = work_.as<float>();
      kernels::scale(w, w, kA, n_, s);
      kernels::axpy(w, kA, w, y_.as<float>(), n_, s);
      kernels::relu(w, w, n_, s);
      kernels::round_bf16(w, w, n_, s);
    }
    timer_.stop(s);
    const double in_seconds = timer_.seconds();
    const std::int64_t in_peak = peak() - base;

    // Out of place: a fresh output per op, the input temporary freed behind it.
    settle_peak();
    kernels::spin(kSpinNs, s);
    timer_.start(s);
    DeviceBlock result = out_of_place(s);
    timer_.stop(s);
    const double out_seconds = timer_.seconds();
    const std::int64_t out_peak = peak() - base;

    tally_.enqueue_compare(work_.get(), result.get(), bytes_, s);
    tally_.enqueue_compare(work_.get(), reference_.get(), bytes_, s);
    stream_.synchronize();
    const kernels::CheckResult check = tally_.collect();
    ctx.verified(check.checked_words, check.bad_words);
    if (!check.ok()) {
      ctx.note(
          fmt::format("repetition {}: {} words differ between in place, out of place and the fused "
                      "reference",
                      ctx.iteration(), check.bad_words));
    }

    // Bytes the kernels move per round: scale r+w, axpy 2r+w, relu r+w, cast r+w (in place) or
    // (r + w/2) + (r/2 + w) out of place: 9 x n x 4 bytes either way.
    const double moved = 9.0 * static_cast<double>(bytes_) * rounds_;
    const double in_gbs = gb_per_s(moved, in_seconds);
    const double out_gbs = gb_per_s(moved, out_seconds);
    const double operands = 2.0 * static_cast<double>(bytes_);
    ctx.record("inplace_GB/s", "GB/s", Better::higher, in_gbs);
    ctx.record("outofplace_GB/s", "GB/s", Better::higher, out_gbs);
    ctx.record("d2d_GB/s", "GB/s", Better::higher, d2d);
    ctx.record("inplace_vs_d2d", "ratio", Better::higher, in_gbs / d2d);
    ctx.record("outofplace_vs_d2d", "ratio", Better::higher, out_gbs / d2d);
    ctx.record("inplace_extra_peak", "x operands", Better::lower, static_cast<double>(in_peak) / operands);
    ctx.record("outofplace_extra_peak", "x operands", Better::lower,
               static_cast<double>(out_peak) / operands);
  }

 private:
  StreamRef here() const noexcept { return StreamRef::from(stream_.get()); }

  DeviceBlock fresh(std::size_t bytes) { return {allocator_, bytes, here()}; }

  DeviceBlock out_of_place(cudaStream_t s) {
    DeviceBlock current;  // empty: the first op reads x, which the caller keeps
    const float* in = x_.as<float>();
    for (int r = 0; r < rounds_; ++r) {
      DeviceBlock scaled = fresh(bytes_);
      kernels::scale(scaled.as<float>(), in, kA, n_, s);
      current = std::move(scaled);  // frees the previous temporary (stream-ordered)
      DeviceBlock summed = fresh(bytes_);
      kernels::axpy(summed.as<float>(), kA, current.as<float>(), y_.as<float>(), n_, s);
      current = std::move(summed);
      DeviceBlock rectified = fresh(bytes_);
      kernels::relu(rectified.as<float>(), current.as<float>(), n_, s);
      current = std::move(rectified);
      DeviceBlock half = fresh(n_ * 2);
      kernels::to_bf16(half.as<std::uint16_t>(), current.as<float>(), n_, s);
      DeviceBlock widened = fresh(bytes_);
      kernels::from_bf16(widened.as<float>(), half.as<std::uint16_t>(), n_, s);
      current = std::move(widened);
      in = current.as<float>();
    }
    return current;
  }

  // Resets the peak to the current allocated bytes, which it returns.
  std::int64_t settle_peak() {
    allocator_.reset_peak_stats();
    return stat(allocator_.memory_stats(), "allocated_bytes.all.current");
  }
  std::int64_t peak() const { return stat(allocator_.memory_stats(), "allocated_bytes.all.peak"); }

  cuda::Stream stream_;
  Allocator& allocator_;
  std::uint64_t n_;
  std::uint64_t bytes_;
  int rounds_;
  DeviceBlock x_;
  DeviceBlock y_;
  DeviceBlock work_;       // the in-place result
  DeviceBlock reference_;  // the fused reference
  DeviceBlock copy_;       // the D2D ceiling's destination
  DeviceTimer timer_;
  kernels::CheckTally tally_;
};

}  // namespace

WorkloadDef workloads::inplace() {
  return {
      .name = "inplace",
      .summary =
          "an elementwise chain (scale, axpy, relu, fp32<->bf16) in place and out of place: extra peak "
          "memory, GB/s against the D2D ceiling, and bit-exact agreement of the two with a fused reference "
          "kernel",
      .needs = {.real_gpu = true},
      .axes =
          {
              {.name = "bytes",
               .type = ParamType::bytes,
               .defaults = {"256M"},
               .full_defaults = {"16M", "256M", "1G"},
               .minimum = 16,
               .help = "size of x (fp32)"},
              {.name = "rounds",
               .type = ParamType::integer,
               .defaults = {"4"},
               .full_defaults = {"1", "4"},
               .minimum = 1,
               .maximum = 10'000,
               .help = "times the chain is applied"},
          },
      .headline = {"inplace_GB/s"},
      .measures_bandwidth = true,
      .prepare = [](CaseContext& ctx) -> std::unique_ptr<CaseRun> {
        return std::make_unique<InplaceRun>(ctx);
      },
  };
}

}  // namespace memstress::suites
