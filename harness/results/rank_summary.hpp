#pragma once

// Across the ranks of a job: for every case (workload, parameters, allocator) and metric, the smallest,
// median and largest of the ranks' medians, and the stragglers: the ranks whose median is worse than
// the median across ranks by more than a threshold (10 % unless --straggler-pct says otherwise), "worse"
// in the metric's own direction (below it for higher-better metrics such as GB/s, above it for
// lower-better ones such as latency; metrics that are neither have no stragglers). Rows that did not
// pass or fail (skips, errors) and non-finite medians take no part. Made only for a run of several ranks.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/results/row.hpp"

namespace memstress {

struct Straggler {
  int rank = 0;
  std::string node;  // the rank's node (DeviceRef::node), empty where the rows do not name one
  double value = 0;
  double worse = 0;  // by this fraction of the median (0.25: 25 % worse)
};

// A measurement (Note [The key of a measurement] in row.hpp) across the ranks that reported it.
struct RankSpread : MeasurementKey {
  int ranks = 0;  // how many ranks reported it
  double min = 0;
  double median = 0;
  double max = 0;
  int min_rank = 0;
  int max_rank = 0;
  std::vector<Straggler> stragglers;
};

// In the order the cases and metrics first appear in `rows`.
std::vector<RankSpread> summarize_ranks(const std::vector<Row>& rows, double threshold);
// How many distinct ranks `rows` come from.
int count_ranks(const std::vector<Row>& rows);

nlohmann::json rank_summary_json(const std::vector<RankSpread>& spreads, double threshold);

}  // namespace memstress
