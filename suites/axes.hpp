#pragma once

// Note [The axes in one place]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The parameter axes (names, types, defaults, --full values, choices and bounds) of the workloads that the
// fuzz target of the plan plans against, and transfers' rule of which combinations are cases, without the
// CUDA code that runs them: those workloads' definitions (suites/NAME.cpp) take their axes from here, and so
// does fuzz/plan_registry.hpp, since fuzz/params.cpp cannot link the suites (Note [Fuzzing the parsers] in
// fuzz/CMakeLists.txt). Between them they have every type of axis, with and without bounds and --full values.
// Every other workload keeps its axes in its own definition (Note [A workload in one place],
// harness/run/workload.hpp); one moves here when the fuzz target starts to plan against it.

#include <cstdint>
#include <vector>

#include "harness/run/params.hpp"

namespace memstress::suites::axes {

inline constexpr std::int64_t kMaxTransferStreams = 32;  // transfers: the streams a copy is split over

std::vector<ParamSpec> alloc_smoke();
std::vector<ParamSpec> transfers();
std::vector<ParamSpec> integrity();
std::vector<ParamSpec> nccl_memory();

// transfers' WorkloadDef::applies: host memory means nothing for a device-to-device copy, and a kernel cannot
// read pageable memory.
bool transfers_applies(const ParamSet& p);

}  // namespace memstress::suites::axes
