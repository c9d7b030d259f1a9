#pragma once

// The burn's stress on the simulated device: the steps of the GPU's (engine.hpp) over a few MiB of host
// memory, so that tests run whole burns in seconds, planted faults included. Its figures measure the host,
// never a GPU: a burn on the simulated device is not judged for acceptance (exit 3 unless a check failed).

#include <cstdint>
#include <memory>

#include "harness/burn/engine.hpp"
#include "harness/core/planted_faults.hpp"

namespace memstress {

// `bytes`: the host memory the pattern stress covers; `faults`: the timed faults to plant.
[[nodiscard]] std::unique_ptr<BurnEngine> make_sim_burn_engine(std::uint64_t bytes, std::uint64_t seed,
                                                               std::vector<TimedFault> faults);

}  // namespace memstress
