#pragma once

// What `memstress db outliers` prints: a table for people, or JSON for scripts.
//
// The JSON ("schema": "memstress.outliers/1"): threshold, min_gpus, relative_floor; gpus (distinct GPUs
// seen), groups_judged, groups_too_small; outliers[], most distant first, each with workload, case,
// allocator, metric, unit, better, model, driver, host, gpu_uuid, pci_bus_id, value, group_median,
// spread (the GPU's: sqrt(S^2 + E^2), the group's scaled MAD S, floor applied, and the GPU's standard error
// E), runs (its rows in the group), score (in that spread) and worse_pct, group_gpus, concurrent_ranks (how
// many ranks ran the case at once in the runs compared). With --groups (keep_groups) also groups[]: every
// judged group (its fields as an outlier's, median, spread: S alone, run_spread: W) with gpus[] (gpu_uuid,
// host, pci_bus_id, value, runs, limit: the value beyond which it is an outlier): what the report's fleet
// page draws. Note [Fleet outliers: median and MAD] (outliers.hpp).

#include <nlohmann/json.hpp>
#include <string>

#include "harness/db/outliers.hpp"

namespace memstress::db {

std::string format_outliers_table(const OutlierReport& report, const OutlierOptions& options);
nlohmann::json outliers_json(const OutlierReport& report, const OutlierOptions& options);

}  // namespace memstress::db
