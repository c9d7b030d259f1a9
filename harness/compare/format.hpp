#pragma once

// What `memstress compare` prints: a table for people, or JSON for scripts.
//
// The JSON ("schema": "memstress.compare/1"): base and new (path, format, rows, notes), threshold_pct,
// alpha, min_samples, test; environment {identical, differences[{what, base, new}]}; rows[] with the
// row's workload, case, params, allocator, device, rank (null where the format has none), presence
// (both, base_only, new_only), base_verdict / new_verdict (null where absent), verdict (SAME, BETTER,
// WORSE, UNSURE, "-") and note, and metrics[] each with name, unit, better, base {n, median}, new {n,
// median}, change_pct, p_value (null where there is none), verdict and note; notes[]; summary {metrics
// {same, better, worse, unsure, not_judged}, rows {matched, regressed, improved, base_only, new_only}};
// regression (a metric WORSE or a row from pass to fail or error); and nothing_compared (null, or why
// nothing was compared: which side has no rows, or why no row matched). The command exits 1 when regression
// is true or nothing_compared is not null.

#include <nlohmann/json.hpp>
#include <string>

#include "harness/compare/compare.hpp"

namespace memstress::compare {

std::string format_table(const Comparison& c);
nlohmann::json comparison_json(const Comparison& c);

}  // namespace memstress::compare
