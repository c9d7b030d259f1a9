#pragma once

// The rank summary (harness/results/rank_summary.hpp) as `run` prints it, in the units of its table.

#include <string>
#include <vector>

#include "harness/results/rank_summary.hpp"

namespace memstress {

// The table `run` prints after the rows: one line per case and metric, stragglers named.
std::string format_rank_summary(const std::vector<RankSpread>& spreads, double threshold);

}  // namespace memstress
