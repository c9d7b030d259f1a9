#pragma once

// The values a check was owed and did not get (Note [What a run promised] in input.hpp).
//
// Note [What a check expects]
// ===========================
// A check matches rows (its workload, its `where`); each distinct case among them (case label and
// allocator) was run by the run its rows came from, and so is owed by every rank that run promised. A
// check's value is missing, and the check FAILs naming the GPU ("missing: ..."), where:
//
// - a promised rank has no row of such a case (it died, hung, or its rows were lost);
// - a matched row failed or errored: whatever figures it carries are not judged (a copy that ended in
//   cudaErrorIllegalAddress measured nothing worth a bound). Counts are the exception: `verdict` counts
//   such rows as not passed, and `verification.errors` counts a failed row's data errors (a row that errored,
//   or failed with none counted, still left its count unfinished);
// - a row that passed has the metric as null, or lacks it where another row of the same case (of any
//   rank, any file) has it: a case that never gives a figure (a device-to-device copy has no page_locked)
//   owes none.
//
// Not missing: a row the harness skipped (its case needs a real GPU, more GPUs) and a row whose note says
// this GPU does not give the figure (kNotMeasured): those leave the check NOT JUDGED on that GPU, as the
// environment lacks what it needs, not the GPU.

#include <optional>
#include <string>

#include "harness/accept/input.hpp"
#include "harness/accept/named_list.hpp"
#include "harness/accept/profile.hpp"

namespace memstress {

// Every value `check` was owed by `input` and lacks, each naming its GPU (rank_name), in the order of the
// runs and ranks, then of the rows.
[[nodiscard]] NamedList missing_values(const AcceptCheck& check, const AcceptInput& input);

// Why `row` could not measure `check`'s metric on its GPU ("nvlink.errors (no NVLink is active on this
// GPU)"), from its kNotMeasured note; nullopt where it says nothing of it.
[[nodiscard]] std::optional<std::string> not_measured_on(const ResultRow& row, const AcceptCheck& check);

}  // namespace memstress
