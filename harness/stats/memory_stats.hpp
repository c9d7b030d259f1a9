#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace memstress {

// An allocator's statistics in PyTorch's flat naming: "allocated_bytes.all.current",
// "reserved_bytes.all.peak", "num_ooms", … (what Allocator::memory_stats() returns,
// harness/alloc/allocator.hpp).
using MemoryStats = std::map<std::string, std::int64_t, std::less<>>;

}  // namespace memstress
