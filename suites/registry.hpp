#pragma once

#include <memory>

#include "harness/run/registry.hpp"

namespace memstress::suites {

// Every built-in workload, in the order `memstress list` and the default job show them.
Registry builtin_registry();

std::unique_ptr<Workload> make_smoke();
std::unique_ptr<Workload> make_alloc_smoke();
std::unique_ptr<Workload> make_sizes();
std::unique_ptr<Workload> make_leak();
std::unique_ptr<Workload> make_transfers();
std::unique_ptr<Workload> make_streams();
std::unique_ptr<Workload> make_inplace();
std::unique_ptr<Workload> make_dataloader();
std::unique_ptr<Workload> make_integrity();
std::unique_ptr<Workload> make_fragmentation();
std::unique_ptr<Workload> make_oom();
std::unique_ptr<Workload> make_collectives();
std::unique_ptr<Workload> make_nccl_memory();
std::unique_ptr<Workload> make_p2p();
std::unique_ptr<Workload> make_health();

}  // namespace memstress::suites
