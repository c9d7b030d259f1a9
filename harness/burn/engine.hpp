#pragma once

// The stress a burn keeps up on one GPU, one step at a time (loop.hpp calls step() until the interval's wall
// clock runs out). Two implementations: the CUDA GPU's (suites/burn_engine.cpp: pattern fill, check and
// moving inversions over most of free memory, copy-engine traffic both ways, cuBLAS GEMMs as a compute
// canary) and the simulated device's (sim_engine.hpp: the same steps over host memory, so a whole burn runs
// in CI).
//
// Every byte the stress writes is checked; a wrong word is counted with its address. The GEMMs run on fixed
// inputs with a fixed algorithm, so each gives the same bits every time on a healthy GPU: the hash of each
// result is kept, and the judge holds each GPU to its own first hash and to the other GPUs' (judge.hpp).

#include <cstdint>
#include <string>
#include <vector>

namespace memstress {

// What an interval's steps did, added up by the engine.
struct BurnWork {
  double memory_bytes =
      0;  // bytes the pattern stress wrote and read on the device (fills, inversions, checks)
  double h2d_bytes = 0;
  double d2h_bytes = 0;
  double bf16_flop = 0;  // the tensor-core GEMMs' floating-point operations
  double fp64_flop = 0;
  // The GEMMs' own time on the device: their rates are flop over it (another process's time slices on the
  // SMs fall inside it); 0 where no GEMM ran.
  double bf16_seconds = 0;
  double fp64_seconds = 0;
  std::uint64_t checked = 0;             // words verified
  std::uint64_t errors = 0;              // of those, wrong
  std::vector<std::string> error_notes;  // "12 bad words from 0x7f2a00000000 (fill 3, pattern walk)", a few
  // The distinct hashes of the GEMMs' results in this interval, in the order first seen (one on a healthy
  // GPU).
  std::vector<std::uint64_t> bf16_hashes;
  std::vector<std::uint64_t> fp64_hashes;
  int steps = 0;
};

class BurnEngine {
 public:
  virtual ~BurnEngine() = default;
  BurnEngine() = default;
  BurnEngine(const BurnEngine&) = delete;
  BurnEngine& operator=(const BurnEngine&) = delete;
  BurnEngine(BurnEngine&&) = delete;
  BurnEngine& operator=(BurnEngine&&) = delete;

  // What it stresses, for the first line ("fill/check 63.2 GiB (90% of free) in 32 blocks, ...").
  [[nodiscard]] virtual std::string describe() const = 0;
  // The GEMM library's version (the vote is among GPUs of one model and one version); "" where none.
  [[nodiscard]] virtual std::string gemm_library() const = 0;
  // One step; adds what it did to `work`. `elapsed_s`: seconds since the burn began (a planted fault's time).
  virtual void step(BurnWork& work, double elapsed_s) = 0;
};

// Adds `hash` to `hashes` unless there; at most a few are kept (a GPU whose results change every time is
// named by its first disagreement).
void note_hash(std::vector<std::uint64_t>& hashes, std::uint64_t hash);
// Adds `note` to `notes`, keeping at most a few.
void note_error(std::vector<std::string>& notes, std::string note);

}  // namespace memstress
