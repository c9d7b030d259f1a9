#pragma once

// The burn's stress on a CUDA GPU (harness/burn/engine.hpp), built on the suites' kernels and cuBLAS.

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "harness/burn/engine.hpp"
#include "harness/core/planted_faults.hpp"

namespace memstress {
class Allocator;
class PinnedHostAllocator;
}  // namespace memstress

namespace memstress::suites {

// `memory_share` of the device's free memory (after the canary's and the copies' buffers) goes to the
// pattern stress, from `allocator`; the copies stage through `host` (page-locked). `faults`: timed faults
// to plant (a fault-hook build's, MEMSTRESS_PLANT_FAULT).
[[nodiscard]] std::unique_ptr<BurnEngine> make_cuda_burn_engine(Allocator& allocator,
                                                                PinnedHostAllocator& host,
                                                                double memory_share, std::uint64_t seed,
                                                                std::vector<TimedFault> faults);

// The hash of one bf16 and one fp64 GEMM of the canary on fixed inputs, run `times` times: each run's
// pair of hashes (a test shows repeated runs agree bit for bit).
[[nodiscard]] std::vector<std::pair<std::uint64_t, std::uint64_t>> canary_hashes(Allocator& allocator,
                                                                                 int times);

}  // namespace memstress::suites
