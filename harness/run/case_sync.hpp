#pragma once

// What the runner does around each case in a job of several ranks: align the ranks before it (so that
// they run the same case at the same time), then bring every rank's row to rank 0, which appends them
// to the one results file. A rank that does not arrive in time makes both throw DistError naming the
// rank and the case.

#include <string_view>
#include <vector>

#include "harness/results/row.hpp"

namespace memstress {

class World;

// A barrier before case `title`.
void align_ranks(World& world, std::string_view title);
// Rank 0: every rank's row for case `title`, in rank order (each as it reads back from its JSON form,
// its own too, so that all rows look alike); other ranks: none. A world of one: {row}.
std::vector<Row> gather_rows(World& world, Row row, std::string_view title);

}  // namespace memstress
