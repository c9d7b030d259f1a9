#pragma once

// Note [One name per figure]. A few figures were recorded under two names, by different workloads or
// twice in one row. The tables name each figure once; the JSON keeps the recorded names, since committed
// results, accept profiles and `compare` (which matches metrics by name across files) use them:
//   ooms (sizes: the OOMs the workload caught), oom_count (oom: the OOMs of the search) -> num_ooms,
//     PyTorch's name, which sizes also records from the allocator's statistics: the same count there
//   trials (oom, search=batch)                   -> probes (oom, search=largest_single): the search's tries
//   largest (oom)                                -> largest_allocatable (fragmentation): the largest
//                                                   single allocation that succeeds (the same search)
//   device_allocated_peak, device_reserved_peak  -> peak_allocated, peak_reserved (sizes, fragmentation):
//     (dataloader, in MiB)                          PyTorch's allocated/reserved_bytes.all.peak
// Where a row has both names of one figure (sizes: ooms and num_ooms), the table shows it once; if the two
// ever disagree, both are shown under their recorded names rather than one hiding the other.

#include <string_view>
#include <vector>

#include "harness/results/row.hpp"

namespace memstress {

// The name the tables print for a metric recorded as `metric`: its one name (above), or `metric` itself.
std::string_view display_name(std::string_view metric) noexcept;

// A row's metrics as the table lists them: in recorded order, each paired with the name to print; a metric
// whose figure the row already has under its one name (with the same median) is left out.
struct ShownMetric {
  const MetricResult* metric = nullptr;
  std::string_view name;
};
std::vector<ShownMetric> shown_metrics(const Row& row);

}  // namespace memstress
