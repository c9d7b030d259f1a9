#pragma once

// Note [One name per figure]. Each figure is recorded under one name, the same in every workload that
// measures it (PyTorch's where PyTorch has one). Files written before that recorded a few under a second
// name; the one reader of results files (read.hpp) gives them their one name, so that `compare`, `accept` and
// the fleet store match an older file's figures with a newer one's, and the tables of both name them alike:
//   oom: oom_count (the OOMs of the search) -> num_ooms, PyTorch's name; trials (search=batch) -> probes
//     (the search's tries, as search=largest_single named them); largest -> largest_allocatable (the largest
//     single allocation that succeeds, as fragmentation names the same search's answer)
//   sizes: ooms (the OOMs the workload caught) -> num_ooms (its row also recorded PyTorch's num_ooms from the
//     allocator's statistics: the same count)
//   dataloader: device_allocated_peak, device_reserved_peak -> peak_allocated, peak_reserved (PyTorch's
//     allocated/reserved_bytes.all.peak, as sizes and fragmentation name them; in MiB there)
// Where an older row has both names of one figure (sizes: ooms and num_ooms) and their medians agree, the
// second name is dropped; if they ever disagree, both are kept as recorded rather than one hiding the other.
// `memstress list --format json` publishes this table, for the Python report's reader.

#include <array>
#include <string_view>
#include <vector>

#include "harness/results/row.hpp"

namespace memstress {

struct FormerName {
  std::string_view workload;
  std::string_view former;
  std::string_view name;
};

inline constexpr std::array<FormerName, 6> kFormerNames{{
    {"oom", "oom_count", "num_ooms"},
    {"oom", "trials", "probes"},
    {"oom", "largest", "largest_allocatable"},
    {"sizes", "ooms", "num_ooms"},
    {"dataloader", "device_allocated_peak", "peak_allocated"},
    {"dataloader", "device_reserved_peak", "peak_reserved"},
}};

// A row of `workload` read from a file: its metrics under their one names (above), in their order.
void adopt_one_names(std::string_view workload, std::vector<MetricResult>& metrics);

}  // namespace memstress
