#pragma once

// The run table: what `memstress run` prints on stdout by default.
//
// Note [The run table]. It is read by people, as nccl-tests' and nvbandwidth's tables are: one line per
// case, and within 160 columns for every workload's default run.
//   WORKLOAD  CASE  [ALLOCATOR]  [DEVICE]  VERDICT  METRIC  VALUE  NOTE
// CASE has only the parameters whose values differ between that workload's cases in the run (the rest
// are the same for all of them: --wide shows them). ALLOCATOR and DEVICE are columns only where they vary
// (several allocators; several devices, RANK:DEVICE with several ranks), as in `compare`'s table; otherwise
// a line above the table says what they are for every row ("every row: allocator caching, device
// sim:80G"). METRIC and VALUE are the case's headline metric (the row's `headline`, which the runner chose
// from its workload's WorkloadDef::headline; a row without one, from an older file, shows its first metric)
// in human units (Note [One unit style per metric], harness/run/quantity.hpp), its median over the
// repetitions. NOTE is short: why a case was skipped, failed or errored (the reason's first line), or for a
// self-test what its pass means
// ("self-test: planted leak found"); it is cut with "..." where the line would pass the width.
// --wide is the table for a closer look, one line per metric: every parameter, the device, every metric
// with N, median, p10, p90 and CV in the unit the median chose (spread only with more than one sample,
// "-" otherwise) and the whole first line of the note. Both name each figure by its one name, as its row
// does (Note [One name per figure], harness/results/former_names.hpp); the JSON and CSV keep raw numbers.

#include <cstddef>
#include <string>
#include <vector>

#include "harness/results/row.hpp"

namespace memstress {

struct TableOptions {
  bool wide = false;        // --wide
  std::size_t width = 160;  // the default table cuts notes to keep its lines within this many columns
};

std::string format_table(const RunRecord& run, const TableOptions& options = {});

// The short note of a row (above), whole.
std::string table_note(const Row& row);

}  // namespace memstress
