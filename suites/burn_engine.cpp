// The burn's stress on a CUDA GPU (burn_engine.hpp).
//
// Note [The burn's step]. One step keeps the copy engines busy throughout and the SMs with the memory stress,
// then the canary; it waits for all of them. What holds the power is the memory stress's data and how it is
// driven. On an H100 (700 W; results/h100/burn-power-580.159.04/): the seven patterns in turn, one a step,
// moving inversions over every block every fourth step, 16 BF16 and 4 FP64 GEMMs a step, drew 554 W (79%);
// random data in 15 blocks of 16 and 4 + 1 GEMMs, the same inversions, 627 W (89.5%); the same without the
// inversions, 668 W (95.4%); random data in every block and no inversions, 680 W (97.2%); this step, 670 W
// (95.8%, 95% of the limit 5 s in). Random data flips about half the bits of every word written and read, and
// its words are computed on the SMs; the constant patterns flip almost none; the inversions'
// read-modify-write passes, a host round trip for each block, leave the SMs and HBM waiting. The parts:
// - memory: every block of the pattern stress filled with its pattern and seed, then checked on the device (a
//   bad block is checked again alone, to name the address of its first wrong word). A block's pattern is
//   random data (a fresh seed each step and block) but for one block in kClassicEvery each step, which takes
//   the classic patterns in turn (zeros, ones, checkerboard, walking ones and zeros, address) and memtest's
//   moving inversions over it between its fill and its check: each block meets each classic pattern, and the
//   inversions, every 6 x kClassicEvery steps (about 12 s on an H100, at 61 ms a step);
// - copies: a 256 MiB device buffer holding a fixed pattern copied to pinned host memory (D2H) while the
//   other pinned buffer, written the step before, is copied to a second device buffer (H2D), four times each,
//   by the copy engines; the landed buffer is checked on the device, and the two host buffers swap roles, so
//   every byte that crossed the bus either way is checked;
// - canary: 4 tensor-core BF16 GEMMs (8192^3, fp32 accumulate and output) and 1 FP64 GEMM (4096^3) on fixed
//   inputs, cuBLAS with atomics not allowed, one stream and a fixed workspace (so its algorithm and order of
//   reduction are fixed: the same bits every time), each result hashed on the device. Its rates are its
//   GEMMs' work over their own time between events on its stream: another process's time slices on the SMs
//   fall between them and show.
// Its work is counted only once the step has ended, so the interval's throughput is work over wall time.

#include "suites/burn_engine.hpp"

#include <fmt/format.h>

#include <array>
#include <chrono>

#include "harness/alloc/allocator.hpp"
#include "harness/alloc/pinned_host_allocator.hpp"
#include "harness/core/cuda_check.hpp"
#include "harness/core/error.hpp"
#include "harness/core/units.hpp"
#include "harness/memory/cuda_handles.hpp"
#include "kernels/canary.hpp"
#include "kernels/pattern.hpp"
#include "suites/support/blocks.hpp"
#include "suites/support/cublas_library.hpp"

namespace memstress::suites {
namespace {

constexpr std::uint64_t mix(std::uint64_t x) noexcept {
  return kernels::splitmix64(x);
}

constexpr std::size_t kBlockBytes = 2ULL << 30U;
constexpr std::size_t kCopyBytes = 256ULL << 20U;
constexpr int kCopies = 4;
constexpr int kBf16N = 8192;
constexpr int kFp64N = 4096;
constexpr int kBf16Gemms = 4;
constexpr int kFp64Gemms = 1;
constexpr std::int64_t kClassicEvery = 32;  // blocks: one in this many holds a classic pattern each step
constexpr std::size_t kWorkspace = 32ULL << 20U;

class Cublas {
 public:
  explicit Cublas(const CublasLibrary& library) : library_(library) {
    MEMSTRESS_CUBLAS_TRY(library_, library_.api().create(&handle_));
  }
  ~Cublas() { static_cast<void>(library_.api().destroy(handle_)); }
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;
  Cublas(Cublas&&) = delete;
  Cublas& operator=(Cublas&&) = delete;
  [[nodiscard]] cublasHandle_t get() const noexcept { return handle_; }

 private:
  const CublasLibrary& library_;
  cublasHandle_t handle_ = nullptr;
};

// The canary: fixed inputs, fixed algorithm, hashed results.
class Canary {
 public:
  Canary(Allocator& allocator, cudaStream_t stream)
      : stream_(stream),
        a16_(allocator, sizeof(std::uint16_t) * kBf16N * kBf16N, StreamRef::from(stream)),
        b16_(allocator, sizeof(std::uint16_t) * kBf16N * kBf16N, StreamRef::from(stream)),
        c32_(allocator, sizeof(float) * kBf16N * kBf16N, StreamRef::from(stream)),
        a64_(allocator, sizeof(double) * kFp64N * kFp64N, StreamRef::from(stream)),
        b64_(allocator, sizeof(double) * kFp64N * kFp64N, StreamRef::from(stream)),
        c64_(allocator, sizeof(double) * kFp64N * kFp64N, StreamRef::from(stream)),
        workspace_(allocator, kWorkspace, StreamRef::from(stream)),
        blas_(library_),
        hashes_(2 * sizeof(unsigned long long)),
        landed_(2 * sizeof(unsigned long long)) {
    kernels::init_bf16(a16_.as<std::uint16_t>(), std::size_t{kBf16N} * kBf16N, 1, stream);
    kernels::init_bf16(b16_.as<std::uint16_t>(), std::size_t{kBf16N} * kBf16N, 2, stream);
    kernels::init_f64(a64_.as<double>(), std::size_t{kFp64N} * kFp64N, 3, stream);
    kernels::init_f64(b64_.as<double>(), std::size_t{kFp64N} * kFp64N, 4, stream);
    const CublasApi& api = library_.api();
    MEMSTRESS_CUBLAS_TRY(library_, api.set_stream(blas_.get(), stream));
    MEMSTRESS_CUBLAS_TRY(library_, api.set_workspace(blas_.get(), workspace_.get(), kWorkspace));
    MEMSTRESS_CUBLAS_TRY(library_, api.set_atomics_mode(blas_.get(), CUBLAS_ATOMICS_NOT_ALLOWED));
    MEMSTRESS_CUBLAS_TRY(library_, api.set_math_mode(blas_.get(), CUBLAS_DEFAULT_MATH));
  }

  // Enqueues the step's GEMMs and the hashes of their last results.
  void enqueue(int bf16_times, int fp64_times) {
    const float alpha = 1;
    const float beta = 0;
    began_.record(stream_);
    for (int i = 0; i < bf16_times; ++i) {
      MEMSTRESS_CUBLAS_TRY(
          library_,
          library_.api().gemm_ex(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, kBf16N, kBf16N, kBf16N, &alpha,
                                 a16_.get(), CUDA_R_16BF, kBf16N, b16_.get(), CUDA_R_16BF, kBf16N, &beta,
                                 c32_.get(), CUDA_R_32F, kBf16N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    bf16_done_.record(stream_);
    const double alpha64 = 1;
    const double beta64 = 0;
    for (int i = 0; i < fp64_times; ++i) {
      MEMSTRESS_CUBLAS_TRY(
          library_, library_.api().dgemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, kFp64N, kFp64N, kFp64N,
                                         &alpha64, a64_.as<double>(), kFp64N, b64_.as<double>(), kFp64N,
                                         &beta64, c64_.as<double>(), kFp64N));
    }
    fp64_done_.record(stream_);
    auto* h = static_cast<unsigned long long*>(hashes_.data());
    kernels::hash_words(c32_.get(), c32_.size(), h, stream_);
    kernels::hash_words(c64_.get(), c64_.size(), h + 1, stream_);
    MEMSTRESS_CUDA_TRY(
        cudaMemcpyAsync(landed_.data(), h, 2 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream_));
  }
  // After the stream has been waited for.
  [[nodiscard]] std::pair<std::uint64_t, std::uint64_t> hashes() const {
    const auto* h = static_cast<const unsigned long long*>(landed_.data());
    return {h[0], h[1]};
  }
  // Seconds the BF16 and the FP64 GEMMs took on the device, after the stream has been waited for.
  [[nodiscard]] std::pair<double, double> seconds() const {
    return {cuda::Event::elapsed_ms(began_, bf16_done_) / 1e3,
            cuda::Event::elapsed_ms(bf16_done_, fp64_done_) / 1e3};
  }
  [[nodiscard]] std::string library() const { return library_.version(); }

 private:
  CublasLibrary library_;  // first: what follows uses it
  cudaStream_t stream_;
  cuda::Event began_, bf16_done_, fp64_done_;
  DeviceBlock a16_, b16_, c32_, a64_, b64_, c64_, workspace_;
  Cublas blas_;  // after its workspace: destroyed before it
  cuda::DeviceBuffer hashes_;
  cuda::PinnedBuffer landed_;
};

class CudaBurnEngine final : public BurnEngine {
 public:
  CudaBurnEngine(Allocator& allocator, PinnedHostAllocator& host, double share, std::uint64_t seed,
                 std::vector<TimedFault> faults)
      : canary_(allocator, gemm_.get()),
        stage_src_(allocator, kCopyBytes, StreamRef::from(copy_out_.get())),
        stage_dst_(allocator, kCopyBytes, StreamRef::from(copy_in_.get())),
        host_{HostBlock(host, kCopyBytes), HostBlock(host, kCopyBytes)},
        seed_(seed),
        faults_(std::move(faults)) {
    kernels::fill(stage_src_.get(), kCopyBytes, kernels::Pattern::random, seed_, copy_out_.get());
    for (HostBlock& h : host_) {
      MEMSTRESS_CUDA_TRY(
          cudaMemcpyAsync(h.get(), stage_src_.get(), kCopyBytes, cudaMemcpyDeviceToHost, copy_out_.get()));
    }
    copy_out_.synchronize();
    gemm_.synchronize();
    std::size_t free_bytes = 0;
    std::size_t total = 0;
    MEMSTRESS_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total));
    std::uint64_t left =
        static_cast<std::uint64_t>(share * static_cast<double>(free_bytes)) & ~((2ULL << 20U) - 1);
    while (left > 0) {
      const std::size_t bytes = std::min<std::uint64_t>(left, kBlockBytes);
      blocks_.emplace_back(allocator, bytes, StreamRef::from(memory_.get()));
      left -= bytes;
      covered_ += bytes;
    }
    share_ = share;
    total_ = total;
  }

  [[nodiscard]] std::string describe() const override {
    return fmt::format(
        "fill/check/moving inversions over {} ({:.0f}% of free memory, {:.1f}% of the GPU's) in {} blocks; "
        "{} copies both ways through pinned memory; {}x{} BF16 and {}x{} FP64 GEMMs ({})",
        human_bytes(covered_), share_ * 100,
        100.0 * static_cast<double>(covered_) / static_cast<double>(total_), blocks_.size(),
        human_bytes(kCopyBytes), kBf16N, kBf16N, kFp64N, kFp64N, gemm_library());
  }
  [[nodiscard]] std::string gemm_library() const override { return canary_.library(); }

  void step(BurnWork& work, double elapsed_s) override {
    const auto began = std::chrono::steady_clock::now();
    const std::uint64_t step_seed = mix(seed_ + static_cast<std::uint64_t>(step_));
    // Copies both ways and the canary, behind the memory stress's kernels on streams of their own.
    for (int i = 0; i < kCopies; ++i) {
      MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(host_[out_].get(), stage_src_.get(), kCopyBytes,
                                         cudaMemcpyDeviceToHost, copy_out_.get()));
      MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(stage_dst_.get(), host_[1 - out_].get(), kCopyBytes,
                                         cudaMemcpyHostToDevice, copy_in_.get()));
    }
    copies_.enqueue(stage_dst_.get(), kCopyBytes, kernels::Pattern::random, seed_, copy_in_.get());
    // The memory stress.
    for (std::size_t b = 0; b < blocks_.size(); ++b) {
      kernels::fill(blocks_[b].get(), blocks_[b].size(), pattern_of(b), step_seed + b, memory_.get());
    }
    if (active(TimedFault::Kind::flip, elapsed_s)) {
      flip_bit();
    }
    double bytes = 2 * static_cast<double>(covered_);  // a fill and a check
    for (std::size_t b = 0; b < blocks_.size(); ++b) {
      const kernels::Pattern pattern = pattern_of(b);
      if (pattern == kernels::Pattern::random) {
        continue;  // moving inversions on the classic patterns' blocks (Note [The burn's step])
      }
      const kernels::CheckResult r =
          inverter_.invert(blocks_[b].get(), blocks_[b].size(), pattern, step_seed + b, memory_.get());
      work.checked += r.checked_words;
      count_bad(work, r, b, "moving inversions");
      bytes += 4 * static_cast<double>(blocks_[b].size());
    }
    for (std::size_t b = 0; b < blocks_.size(); ++b) {
      tally_.enqueue(blocks_[b].get(), blocks_[b].size(), pattern_of(b), step_seed + b, memory_.get());
    }
    if (active(TimedFault::Kind::slow, elapsed_s) && last_step_ns_ > 0) {
      kernels::spin(last_step_ns_, memory_.get());  // as long again: half the throughput
    }
    // The canary after the memory stress, with the SMs to itself (Note [The burn's step]).
    MEMSTRESS_CUDA_TRY(cudaEventRecord(memory_done_.get(), memory_.get()));
    MEMSTRESS_CUDA_TRY(cudaStreamWaitEvent(gemm_.get(), memory_done_.get(), 0));
    canary_.enqueue(kBf16Gemms, kFp64Gemms);
    memory_.synchronize();
    copy_out_.synchronize();
    copy_in_.synchronize();
    gemm_.synchronize();
    const kernels::CheckResult checked = tally_.collect();
    work.checked += checked.checked_words;
    if (!checked.ok()) {
      locate(work, step_seed, checked.bad_words);
    }
    const kernels::CheckResult copied = copies_.collect();
    work.checked += copied.checked_words;
    if (!copied.ok()) {
      work.errors += copied.bad_words;
      note_error(work.error_notes,
                 fmt::format("{} bad word(s) in data copied H2D after D2H (256 MiB at {:#x})",
                             copied.bad_words, reinterpret_cast<std::uintptr_t>(stage_dst_.get())));
    }
    const auto [bf16, fp64] = canary_.hashes();
    note_hash(work.bf16_hashes, bf16);
    note_hash(work.fp64_hashes, fp64);
    const auto [bf16_s, fp64_s] = canary_.seconds();
    work.bf16_flop += kBf16Gemms * 2.0 * kBf16N * kBf16N * double{kBf16N};
    work.fp64_flop += kFp64Gemms * 2.0 * kFp64N * kFp64N * double{kFp64N};
    work.bf16_seconds += bf16_s;
    work.fp64_seconds += fp64_s;
    work.memory_bytes += bytes;
    work.h2d_bytes += kCopies * static_cast<double>(kCopyBytes);
    work.d2h_bytes += kCopies * static_cast<double>(kCopyBytes);
    work.steps += 1;
    out_ = 1 - out_;
    ++step_;
    if (!active(TimedFault::Kind::slow, elapsed_s)) {
      last_step_ns_ = static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - began)
              .count());
    }
  }

 private:
  [[nodiscard]] bool active(TimedFault::Kind kind, double elapsed_s) const {
    return std::any_of(faults_.begin(), faults_.end(),
                       [&](const TimedFault& f) { return f.kind == kind && elapsed_s >= f.after_s; });
  }

  // A planted bit flip: bit 17 of a word of the first block, flipped after the fill (in device memory).
  void flip_bit() {
    auto* word = static_cast<std::uint64_t*>(blocks_.front().get()) + kFlipWord;
    std::uint64_t v = 0;
    MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(&v, word, 8, cudaMemcpyDeviceToHost, memory_.get()));
    memory_.synchronize();
    v ^= 1ULL << 17U;
    MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(word, &v, 8, cudaMemcpyHostToDevice, memory_.get()));
    memory_.synchronize();
  }

  void count_bad(BurnWork& work, const kernels::CheckResult& r, std::size_t block, const char* what) {
    if (r.ok()) {
      return;
    }
    work.errors += r.bad_words;
    note_error(work.error_notes,
               fmt::format("{} bad word(s) in {}, the first at device address {:#x}", r.bad_words, what,
                           reinterpret_cast<std::uintptr_t>(blocks_[block].get()) + r.first_bad_word * 8));
  }

  // Block b's pattern this step (Note [The burn's step]): random data, or for one block in kClassicEvery the
  // classic patterns in turn.
  [[nodiscard]] kernels::Pattern pattern_of(std::size_t b) const {
    const std::int64_t k = step_ + static_cast<std::int64_t>(b);
    if (k % kClassicEvery != 0) {
      return kernels::Pattern::random;
    }
    const auto all = kernels::all_patterns();  // random first, then the classic ones
    return all[1 + static_cast<std::size_t>(k / kClassicEvery) % (all.size() - 1)];
  }

  // The check found `bad` wrong words over all blocks: check each block alone to name where.
  void locate(BurnWork& work, std::uint64_t step_seed, std::uint64_t bad) {
    std::uint64_t named = 0;
    for (std::size_t b = 0; b < blocks_.size() && named < bad; ++b) {
      const kernels::Pattern pattern = pattern_of(b);
      const kernels::CheckResult r =
          checker_.check(blocks_[b].get(), blocks_[b].size(), pattern, step_seed + b, memory_.get());
      named += r.bad_words;
      count_bad(work, r, b,
                fmt::format("the check of fill {} ({})", step_, kernels::to_string(pattern)).c_str());
    }
    if (named < bad) {  // read right the second time: a transient error, counted as the first read saw it
      work.errors += bad - named;
      note_error(work.error_notes,
                 fmt::format("{} bad word(s) that read right a second time (transient)", bad - named));
    }
  }

  static constexpr std::uint64_t kFlipWord = 123457;

  cuda::Stream memory_;
  cuda::Stream copy_out_;
  cuda::Stream copy_in_;
  cuda::Stream gemm_;
  cuda::Event memory_done_{cuda::Event::Timing::disabled};
  Canary canary_;
  DeviceBlock stage_src_;
  DeviceBlock stage_dst_;
  std::array<HostBlock, 2> host_;
  std::vector<DeviceBlock> blocks_;
  kernels::CheckTally tally_;
  kernels::CheckTally copies_;
  kernels::Checker checker_;
  kernels::Checker inverter_;
  std::uint64_t covered_ = 0;
  std::uint64_t total_ = 0;
  double share_ = 0;
  std::uint64_t seed_;
  std::vector<TimedFault> faults_;
  std::int64_t step_ = 0;
  std::size_t out_ = 0;
  std::uint64_t last_step_ns_ = 0;
};

}  // namespace

std::unique_ptr<BurnEngine> make_cuda_burn_engine(Allocator& allocator, PinnedHostAllocator& host,
                                                  double memory_share, std::uint64_t seed,
                                                  std::vector<TimedFault> faults) {
  return std::make_unique<CudaBurnEngine>(allocator, host, memory_share, seed, std::move(faults));
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> canary_hashes(Allocator& allocator, int times) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  const cuda::Stream stream;
  Canary canary(allocator, stream.get());
  for (int i = 0; i < times; ++i) {
    canary.enqueue(1, 1);
    stream.synchronize();
    out.push_back(canary.hashes());
  }
  return out;
}

}  // namespace memstress::suites
