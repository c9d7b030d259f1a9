#pragma once

// Adaptors wrap an upstream allocator and add one concern, so workloads never carry flags for them:
//   LimitingAllocator   — a byte cap on what may be allocated through it (OutOfMemoryError past it);
//   StatisticsAllocator — PyTorch-named counters for any upstream (e.g. `async`, which keeps none);
//   TracingAllocator    — every allocate, free and OOM written to a memstress trace, for replay.
// Each forwards name() as "<adaptor>(<upstream>)", backend() to the upstream, and memory_stats() as the
// upstream's merged with its own keys.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string_view>

#include "harness/alloc/allocator.hpp"

namespace memstress {

class TraceWriter;

std::unique_ptr<Allocator> make_limiting_allocator(std::unique_ptr<Allocator> upstream,
                                                   std::uint64_t limit_bytes);
std::unique_ptr<Allocator> make_statistics_allocator(std::unique_ptr<Allocator> upstream);
// The same counters completing a peer that keeps none of its own (rmm-*, plugin:*), named as the peer.
std::unique_ptr<Allocator> make_peer_statistics(std::unique_ptr<Allocator> peer);
// Writes to `path` (the memstress trace format, docs in harness/trace/trace_format.md). Throws InputError
// naming `what` (the command's flag that gave the path) when the file cannot be written.
std::unique_ptr<Allocator> make_tracing_allocator(std::unique_ptr<Allocator> upstream,
                                                  const std::filesystem::path& path, std::string_view what);

}  // namespace memstress
