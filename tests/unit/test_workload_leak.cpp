// The `leak` workload: its growth test on synthetic series, and the workload on the simulated device
// through the Runner — the default cases (clean and leaky) pass, and a clean case fails when the allocator
// itself leaks.

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "harness/alloc/allocator.hpp"
#include "harness/alloc/factory.hpp"
#include "harness/memory/sim_backend.hpp"
#include "harness/results/sink.hpp"
#include "harness/run/registry.hpp"
#include "harness/run/runner.hpp"
#include "suites/registry.hpp"
#include "suites/support/leak_growth.hpp"
#include "workload_run.hpp"

namespace memstress {
namespace {

using suites::fit_growth;
using suites::Growth;
using suites::growth_flagged;
using suites::growth_threshold;

constexpr std::uint64_t kMiB = 1ULL << 20;
constexpr std::uint64_t kGiB = 1ULL << 30;
constexpr double kMiBd = 1 << 20;

// ---- the growth test -----------------------------------------------------------------------------------

// 20 epochs of base + slope * epoch + noise(epoch), the noise a fixed zig-zag of the given amplitude.
std::vector<double> series(double slope, double noise = 0, double base = 512 * kMiBd) {
  std::vector<double> out;
  for (int e = 0; e < 20; ++e) {
    const double zigzag = (e % 3 == 0 ? 1.0 : e % 3 == 1 ? -1.0 : 0.0) * noise;
    out.push_back(base + slope * e + zigzag);
  }
  return out;
}

TEST(LeakGrowth, ThresholdIsOneMiBOrHalfAPercentOfTheEpoch) {
  EXPECT_DOUBLE_EQ(growth_threshold(64 * kMiB), kMiBd);
  EXPECT_DOUBLE_EQ(growth_threshold(256 * kMiB), 0.005 * 256 * kMiBd);
  EXPECT_DOUBLE_EQ(growth_threshold(0), kMiBd);
}

TEST(LeakGrowth, FlatIsNotFlagged) {
  const Growth g = fit_growth(series(0));
  EXPECT_DOUBLE_EQ(g.bytes_per_epoch, 0);
  EXPECT_DOUBLE_EQ(g.r2, 0);  // nothing varies: nothing to explain
  EXPECT_FALSE(growth_flagged(g, 256 * kMiB));
}

TEST(LeakGrowth, SteadyGrowthIsFlagged) {
  const Growth g = fit_growth(series(12.8 * kMiBd));
  EXPECT_NEAR(g.bytes_per_epoch, 12.8 * kMiBd, 1e-6 * kMiBd);
  EXPECT_NEAR(g.r2, 1, 1e-12);
  EXPECT_TRUE(growth_flagged(g, 256 * kMiB));
}

TEST(LeakGrowth, GrowthBelowTheThresholdIsNotFlagged) {
  const Growth g = fit_growth(series(1.2 * kMiBd));
  EXPECT_NEAR(g.r2, 1, 1e-12);
  EXPECT_FALSE(growth_flagged(g, 256 * kMiB));  // threshold 1.28 MiB per epoch
  EXPECT_TRUE(growth_flagged(g, 64 * kMiB));    // threshold 1 MiB per epoch
}

TEST(LeakGrowth, NoisyGrowthIsFlagged) {
  const Growth g = fit_growth(series(4 * kMiBd, 8 * kMiBd));
  EXPECT_NEAR(g.bytes_per_epoch, 4 * kMiBd, 0.5 * kMiBd);
  EXPECT_GT(g.r2, 0.9);
  EXPECT_LT(g.r2, 1);
  EXPECT_TRUE(growth_flagged(g, 256 * kMiB));
}

TEST(LeakGrowth, NoiseWithoutATrendIsNotFlagged) {
  const Growth g = fit_growth(series(2 * kMiBd, 64 * kMiBd));
  EXPECT_GT(g.bytes_per_epoch, growth_threshold(256 * kMiB));  // the slope alone would pass
  EXPECT_LT(g.r2, 0.9);
  EXPECT_FALSE(growth_flagged(g, 256 * kMiB));
}

TEST(LeakGrowth, AOneOffStepIsNotALeak) {
  std::vector<double> step(20, 0.0);
  std::fill(step.begin() + 10, step.end(), 200 * kMiBd);  // a cache that filled once, halfway
  const Growth g = fit_growth(step);
  EXPECT_GT(g.bytes_per_epoch, growth_threshold(256 * kMiB));
  EXPECT_NEAR(g.r2, 0.75, 0.01);
  EXPECT_FALSE(growth_flagged(g, 256 * kMiB));
}

TEST(LeakGrowth, TooShortASeriesHasNoSlope) {
  const std::vector<double> one{5.0};
  EXPECT_DOUBLE_EQ(fit_growth(one).bytes_per_epoch, 0);
  EXPECT_DOUBLE_EQ(fit_growth(std::vector<double>{}).r2, 0);
}

// ---- the workload --------------------------------------------------------------------------------------

// Forwards to an upstream allocator but keeps every `every`-th freed block: an allocator that leaks.
class LeakyAllocator final : public Allocator {
 public:
  LeakyAllocator(std::unique_ptr<Allocator> upstream, int every)
      : upstream_(std::move(upstream)), every_(every) {}
  ~LeakyAllocator() override {
    for (void* p : kept_) {
      upstream_->deallocate(p);
    }
  }
  LeakyAllocator(const LeakyAllocator&) = delete;
  LeakyAllocator& operator=(const LeakyAllocator&) = delete;
  LeakyAllocator(LeakyAllocator&&) = delete;
  LeakyAllocator& operator=(LeakyAllocator&&) = delete;

  [[nodiscard]] std::string_view name() const noexcept override { return "leaky"; }
  [[nodiscard]] DeviceBackend& backend() const noexcept override { return upstream_->backend(); }
  [[nodiscard]] MemoryStats memory_stats() const override { return upstream_->memory_stats(); }
  void reset_peak_stats() override { upstream_->reset_peak_stats(); }

 private:
  void* do_allocate(std::size_t bytes, StreamRef stream) override {
    return upstream_->allocate(bytes, stream);
  }
  void do_deallocate(void* ptr) override {
    if (++frees_ % every_ == 0) {
      kept_.push_back(ptr);
    } else {
      upstream_->deallocate(ptr);
    }
  }

  std::unique_ptr<Allocator> upstream_;
  int every_;
  int frees_ = 0;
  std::vector<void*> kept_;
};

std::vector<Row> run_leak(std::vector<ParamOverride> overrides, std::uint64_t seed = 1, int leak_every = 0) {
  SimBackend device(4 * kGiB);
  std::unique_ptr<Allocator> alloc = make_allocator("caching", device);
  if (leak_every > 0) {
    alloc = std::make_unique<LeakyAllocator>(std::move(alloc), leak_every);
  }
  return testing::run_workload(*alloc, "leak", std::move(overrides), seed);
}

using testing::axis;

// The default cases (retained 0 and 0.05), shorter.
std::vector<ParamOverride> small() {
  return {axis("epochs", {"10"}), axis("per_epoch", {"64M"})};
}

std::string notes_of(const Row& row) {
  std::string all;
  for (const std::string& n : row.notes) {
    all += n + "\n";
  }
  return all;
}

TEST(LeakWorkload, TheCleanCaseIsNotFlaggedAndTheLeakyOneIs) {
  const auto rows = run_leak(small());
  ASSERT_EQ(rows.size(), 2U);
  const Row& clean = rows[0];
  const Row& leaky = rows[1];
  ASSERT_EQ(clean.case_label(), "epochs=10 per_epoch=64M retained=0");
  for (const Row& row : rows) {
    EXPECT_EQ(row.verdict, Verdict::pass) << row.case_label() << ": " << row.reason;
    EXPECT_EQ(row.errors, 0U);
    EXPECT_EQ(row.checked, 6U);  // 3 repetitions x (the detector + the balance after freeing)
    ASSERT_NE(row.metric("growth_per_epoch"), nullptr);
    EXPECT_EQ(row.metric("growth_per_epoch")->unit, "bytes/epoch");
    EXPECT_EQ(row.metric("growth_per_epoch")->better, Better::lower);
    EXPECT_EQ(row.metric("growth_r2")->unit, "ratio");
    EXPECT_EQ(row.metric("leaked")->unit, "bytes");
    EXPECT_EQ(row.metric("leaked")->better, Better::lower);
    EXPECT_EQ(row.metric("leaked")->samples.size(), 2U);
    EXPECT_EQ(row.allocator_stats.at("allocated_bytes.all.current"), 0);  // all freed at the end
  }
  EXPECT_DOUBLE_EQ(clean.metric("growth_per_epoch")->summary.median, 0);
  EXPECT_DOUBLE_EQ(clean.metric("leaked")->summary.median, 0);
  EXPECT_NE(notes_of(clean).find("not flagged, as expected"), std::string::npos) << notes_of(clean);

  // 5% of 64 MiB kept per epoch (a little more once the allocator has rounded the blocks).
  const double growth = leaky.metric("growth_per_epoch")->summary.median;
  EXPECT_GT(growth, 0.9 * 0.05 * 64 * kMiBd);
  EXPECT_LT(growth, 1.5 * 0.05 * 64 * kMiBd);
  EXPECT_GT(leaky.metric("growth_r2")->summary.median, 0.99);
  EXPECT_NEAR(leaky.metric("leaked")->summary.median, 10 * growth, 2 * growth);
  EXPECT_NE(notes_of(leaky).find("flagged as a leak, as expected"), std::string::npos) << notes_of(leaky);
  EXPECT_NE(notes_of(leaky).find("allocated memory grows by"), std::string::npos);
}

TEST(LeakWorkload, TheSameSeedGivesTheSameFigures) {
  const auto a = run_leak(small(), 3);
  const auto b = run_leak(small(), 3);
  EXPECT_EQ(a[1].metric("growth_per_epoch")->samples, b[1].metric("growth_per_epoch")->samples);
  EXPECT_EQ(a[1].metric("leaked")->samples, b[1].metric("leaked")->samples);
}

TEST(LeakWorkload, ACleanCaseFailsWhenTheAllocatorItselfLeaks) {
  auto overrides = small();
  overrides.push_back(axis("retained", {"0"}));
  const auto rows = run_leak(overrides, 1, 50);
  ASSERT_EQ(rows.size(), 1U);
  EXPECT_EQ(rows[0].verdict, Verdict::fail);
  const std::string notes = notes_of(rows[0]);
  EXPECT_NE(notes.find("flagged as a leak, but retained = 0"), std::string::npos) << notes;
  EXPECT_NE(notes.find("still allocated after everything was freed"), std::string::npos) << notes;
}

TEST(LeakWorkload, ARetainedAmountTheDetectorCannotSeeIsRefused) {
  auto overrides = small();
  overrides.push_back(axis("retained", {"0.01"}));  // 655 KiB per epoch: under the 1 MiB floor
  const auto rows = run_leak(overrides);
  ASSERT_EQ(rows.size(), 1U);
  EXPECT_EQ(rows[0].verdict, Verdict::error);
  EXPECT_NE(rows[0].reason.find("below what the detector reliably sees"), std::string::npos)
      << rows[0].reason;
}

}  // namespace
}  // namespace memstress
