#pragma once

// What `memstress doctor` and `predict-batch` read: a PyTorch snapshot (converted, with its facts), an
// RMM log (converted) or a memstress trace, told apart by content (harness/replay/snapshot_input.hpp).

#include <filesystem>

#include "harness/doctor/facts.hpp"
#include "harness/replay/replay_trace.hpp"

namespace memstress::doctor {

struct DoctorInput {
  replay::ReplayTrace trace;
  SnapshotFacts facts;
};

// Throws InputError naming the file when it is neither, EnvironmentError when the converter cannot run.
[[nodiscard]] DoctorInput load_input(const std::filesystem::path& path);

}  // namespace memstress::doctor
