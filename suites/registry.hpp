#pragma once

#include "harness/run/registry.hpp"

namespace memstress::suites {

// Every built-in workload, in the order `memstress list` and the default job show them: MEMSTRESS_WORKLOADS
// in suites/CMakeLists.txt (Note [A workload in one place], harness/run/workload.hpp).
Registry builtin_registry();

}  // namespace memstress::suites

// workloads::NAME(), the definition of each (suites/NAME.cpp), declared from that list.
#include "suites/workload_list.hpp"
