#pragma once

// `memstress db export --format openmetrics`: the fleet's latest state as Prometheus reads it (Note
// [memstress in OpenMetrics], harness/run/openmetrics.hpp). For each GPU, the newest row of each
// measurement (workload, case, allocator) among the runs held, and each host's newest run; a GPU whose
// last run skipped a case exports that skip, not an older pass.

#include <string>

#include "harness/db/store.hpp"

namespace memstress::db {

// The exposition (`# EOF` last) of the newest rows held; `since` as ObservationFilter's.
std::string export_openmetrics(Store& store, const std::string& since);

}  // namespace memstress::db
