#pragma once

// The checks of the run itself, beside a profile's (Note [What a run promised] in input.hpp): what its
// header promised and how it ended, read from every run judged, whatever the profile checks. Each that
// fails is a FAIL line of its own, named like a check ("FAIL  run: complete: ..."), and fails the verdict:
//
//   run: complete                        every run ended complete (not aborted, not a stream left running)
//   ranks: every rank reported           every rank a header promised has a row
//   ranks: no row from outside the run   no row of a rank its header does not have
//   rows: none failed or errored         every row passed or was skipped
//   inputs: one GPU model                the rows are of one GPU model (unless --any-gpu)

#include <string>
#include <string_view>
#include <vector>

#include "harness/accept/input.hpp"

namespace memstress {

struct RunCheckFailure {
  std::string name;    // "run: complete"
  std::string detail;  // the line after the name, naming the run, the rank or the GPU
};

// The run checks `input` fails, in the order above; none where it passes them all. `one_model`: results of
// several GPU models fail (accept without --any-gpu), naming `any_gpu_flag` (the command's flag that judges
// them together).
[[nodiscard]] std::vector<RunCheckFailure> check_runs(const AcceptInput& input, bool one_model,
                                                      std::string_view any_gpu_flag);

// The GPU models of the rows, in the order first seen, each with the run it was first seen in.
struct GpuModel {
  std::string name;  // "NVIDIA H100 80GB HBM3"
  std::string run;   // JudgedRun::name
};
[[nodiscard]] std::vector<GpuModel> gpu_models(const AcceptInput& input);

}  // namespace memstress
