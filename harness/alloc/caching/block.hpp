#pragma once

#include <cstdint>
#include <vector>

#include "harness/alloc/caching/sizing.hpp"
#include "harness/memory/stream_ref.hpp"

namespace memstress::caching {

// A piece of a segment. The blocks of one segment form a doubly linked list in address order; a free
// block sits in its pool's free set, an allocated one in the live map, a pending one (freed, waiting on
// events of other streams) in neither.
struct Block {
  std::uintptr_t ptr = 0;
  std::uint64_t size = 0;
  std::uint64_t requested = 0;  // what the caller asked for (stale once freed, as in PyTorch)
  PoolKind pool = PoolKind::large;
  bool allocated = false;
  bool mapped = true;       // false: an unmapped stretch of an expandable segment
  bool expandable = false;  // part of an expandable segment
  int event_count = 0;      // events still to complete before a pending free becomes free
  Block* prev = nullptr;
  Block* next = nullptr;
  std::vector<StreamRef> stream_uses;  // record_stream, other than the owning stream
  std::uint64_t gc_base = 0;           // the pool's GC clock when the block was last freed

  [[nodiscard]] bool is_split() const noexcept { return prev != nullptr || next != nullptr; }
  [[nodiscard]] bool is_free() const noexcept {
    return !allocated && event_count == 0 && stream_uses.empty();
  }
};

// A free-set key that sorts before every block of its size: lower_bound(SizeKey{n}) is the best fit for n.
struct SizeKey {
  std::uint64_t size = 0;
};

// Best fit: the smallest size, then the lowest address (PyTorch's order within a stream).
struct BySize {
  using is_transparent = void;
  bool operator()(const Block* a, const Block* b) const noexcept {
    return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
  }
  bool operator()(const Block* a, SizeKey key) const noexcept { return a->size < key.size; }
  bool operator()(SizeKey key, const Block* b) const noexcept { return key.size <= b->size; }
};

struct ByAddress {
  bool operator()(const Block* a, const Block* b) const noexcept { return a->ptr < b->ptr; }
};

}  // namespace memstress::caching
