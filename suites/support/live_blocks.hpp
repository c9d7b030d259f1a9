#pragma once

// LiveBlocks: the blocks a workload holds through the shared allocator, in one owner.
//
// Design. The fragmentation and OOM workloads allocate and free in patterns and searches, and must not
// leak when a case is interrupted (an OOM the harness turns into an error row, a data error): LiveBlocks
// frees whatever is still live when it goes, so a CaseRun that keeps one as a member cleans up after any
// exception. It also makes the checks every such workload owes its data:
//   - on any device, the simulated one included: every new block is 256-byte aligned (what cudaMalloc
//     guarantees) and overlaps no live block (an ordered map of address ranges; one check per block);
//   - on a device with memory, when data checks are on: each block is filled with the random pattern
//     (kernels/pattern.hpp) from a seed of its own when it is allocated, and checked on the device before
//     it is freed (free, free_all) or at check_all, so a block that another one overwrote is caught.
// grow() is the naive "allocate larger, copy, free old" of a growing buffer (a KV cache). On a GPU the copy
// is a real device-to-device copy and the new tail is filled so that the whole block continues the old
// block's pattern (the random pattern's word i is a function of seed + i), so the check verifies the copy.
// Everything runs on the legacy default stream, where the blocks are allocated: frees and reuse stay in
// stream order without events.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "harness/alloc/allocator.hpp"
#include "kernels/pattern.hpp"

namespace memstress {
class CaseContext;
}

namespace memstress::suites {

class LiveBlocks {
 public:
  using Id = std::uint64_t;

  // Data checks run only when `data_checks` is set and the device has memory behind its addresses.
  LiveBlocks(Allocator& allocator, bool data_checks);
  ~LiveBlocks();
  LiveBlocks(const LiveBlocks&) = delete;
  LiveBlocks& operator=(const LiveBlocks&) = delete;
  LiveBlocks(LiveBlocks&&) = delete;
  LiveBlocks& operator=(LiveBlocks&&) = delete;

  // Seeds of the blocks allocated from now on derive from `seed`.
  void reseed(std::uint64_t seed) noexcept { seed_ = seed; }

  // Allocates `bytes` (> 0). Throws OutOfMemoryError when the allocator cannot; nothing is held then.
  Id allocate(std::size_t bytes);
  // A block of `bytes` (>= the old size) holding the old block's contents; the old block is freed.
  // Throws OutOfMemoryError when the new block cannot be had; the old one stays live then.
  Id grow(Id id, std::size_t bytes);
  // Checks the block's data (when on) and frees it.
  void free(Id id);
  // Checks the data of every live block.
  void check_all();
  // Checks and frees every live block.
  void free_all();
  // Frees every live block without checks (error paths, the destructor).
  void release_all() noexcept;

  [[nodiscard]] std::size_t count() const noexcept { return blocks_.size(); }
  [[nodiscard]] std::uint64_t live_bytes() const noexcept { return live_bytes_; }
  [[nodiscard]] bool data_checks() const noexcept { return checker_.has_value(); }

  // Reports the checks made since the last report to `ctx` (ctx.verified), and the first error ever
  // seen as a note (once).
  void report(CaseContext& ctx);

 private:
  struct Block {
    void* ptr = nullptr;
    std::size_t bytes = 0;
    std::uint64_t seed = 0;
  };
  struct Range {
    std::uintptr_t end = 0;
    Id id = 0;
  };

  Block& at(Id id);
  Id insert(void* ptr, std::size_t bytes, std::uint64_t seed);
  void erase(Id id, const Block& block);
  void check_placement(Id id, const Block& block);
  void check_data(Id id, const Block& block);
  void error(std::uint64_t count, std::string text);

  Allocator& allocator_;
  std::optional<kernels::Checker> checker_;  // only where data is checked
  std::uint64_t seed_ = 0;
  Id next_id_ = 0;
  std::map<Id, Block> blocks_;              // by id: allocation order
  std::map<std::uintptr_t, Range> ranges_;  // by start address: the overlap check
  std::uint64_t live_bytes_ = 0;
  std::uint64_t checked_ = 0;
  std::uint64_t errors_ = 0;
  std::string first_error_;
  bool noted_ = false;
};

}  // namespace memstress::suites
