// integrity: fill and verify most of the device's memory with several patterns (the acceptance test's
// memory check, in the manner of DCGM's memory diagnostic and memtest-style tools).
//
// Note [Coverage and classification]. The case takes `fraction` of the memory free at its start, in blocks
// of `block` bytes from the shared allocator (so the allocator's own path is part of what is tested), the
// last one smaller (whole 2 MiB pages) so that the share asked for is what is tested. For
// each pattern it fills every block, then checks every block on the device. A block with bad words is read
// a second time: words that are still wrong are `persistent` (the cell holds a wrong value: a stuck bit, a
// bad row, or a write that went astray), words that read right the second time are `transient` (the read
// was wrong: a marginal cell or link). Both fail the case. The seed changes per pattern and repetition, so
// a block that silently kept old data cannot pass. `coverage` is the bytes tested over the device's total
// memory; `fill_GB/s` and `check_GB/s` time the passes over all blocks.
//
// With `inversions` (the default), each fill is followed by memtest's moving inversions before the check:
// every word compared with the pattern and given the pattern's complement going up the block, then compared
// with the complement and given the pattern back going down (a cell coupled to a neighbour, or one that
// cannot hold a 0 or a 1, differs on one of the passes; what should be there is written, not what was read,
// so one bad read is counted once). Those words are `inversion_errors` (counted once per pass they differ
// in), apart from the check's persistent and transient ones; all of them are the case's data errors.
// `s/GiB` is the seconds the fills, inversions and first reads of every pattern took per GiB tested (the
// second reads of bad blocks left out). A bad word's note gives its device address, so a planted stuck bit
// (Note [Planted faults]) is found where it was put.

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/core/cuda_check.hpp"
#include "harness/core/error.hpp"
#include "harness/core/units.hpp"
#include "harness/memory/backend.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "harness/run/context.hpp"
#include "harness/run/timing.hpp"
#include "harness/run/workload.hpp"
#include "kernels/pattern.hpp"
#include "suites/axes.hpp"
#include "suites/registry.hpp"
#include "suites/support/blocks.hpp"

namespace memstress::suites {
namespace {

constexpr int kMaxNotes = 5;
constexpr std::uint64_t kTailUnit = 2ULL << 20U;  // the last block is whole 2 MiB pages

std::string word_address(const void* block, std::uint64_t word) {
  return fmt::format("{:#x}", reinterpret_cast<std::uintptr_t>(block) + word * 8U);
}

std::vector<kernels::Pattern> parse_patterns(const std::string& list) {
  std::vector<kernels::Pattern> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t end = std::min(list.find('+', start), list.size());
    out.push_back(kernels::parse_pattern(list.substr(start, end - start), "integrity.patterns"));
    start = end + 1;
  }
  return out;
}

class IntegrityRun final : public CaseRun {
 public:
  explicit IntegrityRun(CaseContext& ctx)
      : patterns_(parse_patterns(ctx.params().text("patterns"))),
        inversions_(ctx.params().boolean("inversions")) {
    const double fraction = ctx.params().real("fraction");  // in [0.01, 0.99], checked when planned
    const std::uint64_t block = ctx.params().bytes("block");
    const MemInfo info = ctx.device().mem_info();
    total_ = info.total;
    const auto target = static_cast<std::uint64_t>(fraction * static_cast<double>(info.free));
    const StreamRef stream = StreamRef::from(stream_.get());
    for (std::uint64_t have = 0; have < target;) {
      const std::uint64_t bytes = std::min(block, (target - have) / kTailUnit * kTailUnit);
      if (bytes == 0) {
        break;
      }
      try {
        blocks_.emplace_back(ctx.allocator(), bytes, stream);
      } catch (const OutOfMemoryError&) {
        if (blocks_.empty()) {
          throw;  // nothing to test is an error, not a pass
        }
        break;  // what the device will give is what is tested; coverage says how much
      }
      have += bytes;
      tested_ += bytes;
    }
    if (blocks_.empty()) {
      throw OutOfMemoryError(fmt::format("integrity: {} of free memory is less than one 2 MiB page to test",
                                         format_bytes(target)));
    }
  }

  void iteration(CaseContext& ctx) override {
    cudaStream_t s = stream_.get();
    std::uint64_t persistent = 0;
    std::uint64_t transient = 0;
    double fill_s = 0;
    double check_s = 0;
    double invert_s = 0;
    std::uint64_t inverted = 0;
    int notes = 0;
    for (std::size_t p = 0; p < patterns_.size(); ++p) {
      const std::uint64_t seed =
          ctx.seed() + (static_cast<std::uint64_t>(ctx.iteration()) << 32U) + p * 7919U;
      timer_.start(s);
      for (std::size_t b = 0; b < blocks_.size(); ++b) {
        kernels::fill(blocks_[b].get(), blocks_[b].size(), patterns_[p], seed + b, s);
      }
      timer_.stop(s);
      fill_s += timer_.seconds();
      if (inversions_) {
        const HostTimer invert_timer;
        for (std::size_t b = 0; b < blocks_.size(); ++b) {
          const kernels::CheckResult moved =
              checker_.invert(blocks_[b].get(), blocks_[b].size(), patterns_[p], seed + b, s);
          ctx.verified(moved.checked_words, moved.bad_words);
          inverted += moved.bad_words;
          if (!moved.ok() && notes++ < kMaxNotes) {
            ctx.note(
                fmt::format("pattern {}, moving inversions: block {}: {} words did not hold their value "
                            "(first at word {}, address {})",
                            kernels::to_string(patterns_[p]), b, moved.bad_words, moved.first_bad_word,
                            word_address(blocks_[b].get(), moved.first_bad_word)));
          }
        }
        invert_s += invert_timer.seconds();
      }
      std::vector<kernels::CheckResult> first(blocks_.size());
      const HostTimer check_timer;
      for (std::size_t b = 0; b < blocks_.size(); ++b) {
        first[b] = checker_.check(blocks_[b].get(), blocks_[b].size(), patterns_[p], seed + b, s);
      }
      check_s += check_timer.seconds();
      for (std::size_t b = 0; b < blocks_.size(); ++b) {
        ctx.verified(first[b].checked_words, 0);
        if (first[b].ok()) {
          continue;
        }
        const kernels::CheckResult again =
            checker_.check(blocks_[b].get(), blocks_[b].size(), patterns_[p], seed + b, s);
        const std::uint64_t still = std::min(again.bad_words, first[b].bad_words);
        persistent += still;
        transient += first[b].bad_words - still;
        ctx.verified(0, first[b].bad_words);
        if (notes++ < kMaxNotes) {
          ctx.note(fmt::format(
              "pattern {}: block {} at {}: {} bad words on the first read (first at word {}, address "
              "{}), {} on the second",
              kernels::to_string(patterns_[p]), b, blocks_[b].get(), first[b].bad_words,
              first[b].first_bad_word, word_address(blocks_[b].get(), first[b].first_bad_word),
              again.bad_words));
        }
      }
    }
    const double bytes = static_cast<double>(tested_) * static_cast<double>(patterns_.size());
    ctx.record("coverage", "share of total", Better::higher,
               static_cast<double>(tested_) / static_cast<double>(total_));
    ctx.record("persistent_errors", "words", Better::lower, static_cast<double>(persistent));
    ctx.record("transient_errors", "words", Better::lower, static_cast<double>(transient));
    if (inversions_) {
      ctx.record("inversion_errors", "words", Better::lower, static_cast<double>(inverted));
    }
    ctx.record("fill_GB/s", "GB/s", Better::higher, gb_per_s(bytes, fill_s));
    ctx.record("check_GB/s", "GB/s", Better::higher, gb_per_s(bytes, check_s));
    ctx.record(
        "s/GiB", "s/GiB", Better::lower,
        (fill_s + invert_s + check_s) / (static_cast<double>(tested_) / static_cast<double>(1ULL << 30U)));
  }

 private:
  cuda::Stream stream_;
  std::vector<kernels::Pattern> patterns_;
  bool inversions_;
  std::vector<DeviceBlock> blocks_;
  std::uint64_t tested_ = 0;
  std::uint64_t total_ = 1;
  DeviceTimer timer_;
  kernels::Checker checker_{/*planted=*/true};
};

}  // namespace

WorkloadDef workloads::integrity() {
  return {
      .name = "integrity",
      .summary =
          "fill and verify most of the device's free memory (`fraction` of it, in blocks from the shared "
          "allocator) with several patterns (five by default), each followed by moving inversions "
          "(`inversions=true`: the complement written going up, the pattern going down, each word compared "
          "first); a block with bad words is read again, so persistent errors are told from transient ones, "
          "words the inversions found are `inversion_errors`, and a bad word's note gives its device "
          "address; `coverage` (bytes tested over total memory), fill and check GB/s, `s/GiB` (the whole "
          "test's seconds per GiB tested). Not in the default job: acceptance profiles run it",
      .needs = {.real_gpu = true},
      .axes = axes::integrity(),  // Note [The axes in one place], suites/axes.hpp
      .headline = {"coverage"},
      .max_repetitions = 1,
      // Not in the quick default job: it touches all of the device's memory several times. `accept` runs it.
      .in_default_job = false,
      .measures_bandwidth = true,
      .prepare = [](CaseContext& ctx) -> std::unique_ptr<CaseRun> {
        return std::make_unique<IntegrityRun>(ctx);
      },
  };
}

}  // namespace memstress::suites
