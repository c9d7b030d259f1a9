#pragma once

// `memstress db export --format openmetrics`: the fleet's latest state as Prometheus reads it (Note
// [memstress in OpenMetrics], harness/run/openmetrics.hpp). For each GPU, the newest row of each
// measurement (workload, case, allocator) among the runs held, and each host's newest run; a GPU whose
// last run skipped a case exports that skip, not an older pass.

#include <functional>
#include <string>
#include <string_view>

#include "harness/db/store.hpp"

namespace memstress::db {

struct ExportFilter {
  std::string since;  // as ObservationFilter's: only rows of runs started at or after it
  std::string host;   // "" every GPU; else the GPUs last seen on this host (a node's own textfile)
};

// The exposition (`# EOF` last) of the newest rows held, handed to `write` in pieces: read from latest_rows
// (Note [Summaries kept at ingest]), what it costs is the fleet's size (a GPU's newest rows), never its
// history; never held whole (at 100,000 GPUs it is gigabytes).
void export_openmetrics(Store& store, const ExportFilter& filter,
                        const std::function<void(std::string_view)>& write);
// The same, whole.
std::string export_openmetrics(Store& store, const std::string& since);

}  // namespace memstress::db
