#pragma once

#include <string>
#include <string_view>

#include "harness/stats/memory_stats.hpp"

namespace memstress {

// torch.cuda.memory_summary()'s table, from PyTorch-named statistics (any allocator's memory_stats();
// rows whose keys an allocator does not keep are left out). 75 columns wide; byte columns scale to
// KiB/MiB/GiB by the "all" row's value, count columns to K/M, as PyTorch does.
std::string memory_summary(const MemoryStats& stats, std::string_view title, bool abbreviated = false);

}  // namespace memstress
