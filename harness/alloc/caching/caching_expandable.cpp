// Expandable segments (PyTorch's Note [Expandable Segments], rebuilt): instead of one cudaMalloc per
// segment, each stream and pool reserves one virtual range of ~1.125x the device's memory and maps
// physical pages into it as it grows: 2 MiB pages for the small pool, 20 MiB for the large one. Blocks
// tile the range; stretches with no pages behind them are blocks with mapped == false, kept in the
// stream's `unmapped` set. A request that no free block fits extends the lowest free stretch (a free
// mapped block followed by unmapped pages, or unmapped pages alone) by mapping just enough pages, so
// memory freed at the end of a segment is reused in place and fragmentation between segments
// disappears. Releasing (empty_cache, OOM) unmaps the pages lying wholly inside free blocks.
// Invariant: unmapped blocks start and end on page boundaries.

#include <fmt/format.h>

#include <cmath>

#include "harness/alloc/caching/caching_allocator.hpp"
#include "harness/core/error.hpp"

namespace memstress::caching {
namespace {

const ExpandableSegment& segment_of(const StreamPools& sp, std::uintptr_t ptr) {
  if (sp.expandable != nullptr) {
    for (const ExpandableSegment& seg : sp.expandable->segments) {
      if (ptr >= seg.base && ptr < seg.base + seg.size) {
        return seg;
      }
    }
  }
  throw std::logic_error(fmt::format("expandable segments: no segment holds {:#x}", ptr));
}

std::uint64_t round_up(std::uint64_t value, std::uint64_t multiple) noexcept {
  return (value + multiple - 1) / multiple * multiple;
}

void* as_pointer(std::uintptr_t address) noexcept {
  return reinterpret_cast<void*>(address);  // NOLINT(performance-no-int-to-ptr)
}

}  // namespace

Block* CachingAllocator::new_expandable_segment(StreamPools& sp, PoolKind pool) {
  const std::uint64_t page = pool == PoolKind::small ? kSmallBuffer : kLargeBuffer;
  const auto pages = static_cast<std::uint64_t>(
      std::ceil(1.125 * static_cast<double>(backend_.info().capacity) / static_cast<double>(page)));
  const std::uint64_t size = pages * page;
  void* base = backend_.reserve_address_range(size);
  const auto address = reinterpret_cast<std::uintptr_t>(base);
  // The owner map learns a page when it is mapped (map_block) and forgets it when unmapped (unmap_block):
  // a reservation is 1.125 times the device, 589,824 pages of 2 MiB on a device of 1 TiB, written once for
  // every stream's segment when it was assigned whole here.
  sp.ranges().segments.push_back(ExpandableSegment{address, size, page, pool});
  Block* u = sp.new_block();
  u->ptr = address;
  u->size = size;
  u->pool = pool;
  u->mapped = false;
  u->expandable = true;
  sp.ranges().unmapped[static_cast<std::size_t>(pool)].insert(u);
  return u;
}

Block* CachingAllocator::try_allocate_expandable(StreamPools& sp, const Request& r) {
  const auto pool = static_cast<std::size_t>(r.pool);
  // The lowest stretch of free blocks and unmapped pages that can hold the request.
  Block* c = nullptr;
  for (Block* u : sp.ranges().unmapped[pool]) {
    Block* start = (u->prev != nullptr && u->prev->mapped && u->prev->is_free()) ? u->prev : u;
    std::uint64_t room = 0;
    for (const Block* x = start; x != nullptr && x->is_free() && room < r.size; x = x->next) {
      room += x->size;
    }
    if (room >= r.size) {
      c = start;
      break;
    }
  }
  if (c == nullptr) {
    try {
      c = new_expandable_segment(sp, r.pool);
    } catch (const OutOfMemoryError&) {
      return nullptr;  // no address space left: the caller's release-and-retry path takes over
    }
  }
  if (!c->mapped) {
    c = map_block(sp, c, std::min(c->size, r.size));
    if (c == nullptr) {
      return nullptr;
    }
  }
  while (c->size < r.size) {
    Block* n = c->next;
    if (n->mapped) {
      sp.erase_free(sp.free[pool], c);
      try_merge(sp, c, n);
      sp.insert_free(sp.free[pool], c);
      continue;
    }
    c = map_block(sp, n, std::min(r.size - c->size, n->size));
    if (c == nullptr) {
      return nullptr;
    }
  }
  sp.erase_free(sp.free[pool], c);
  return c;
}

Block* CachingAllocator::map_block(StreamPools& sp, Block* u, std::uint64_t bytes) {
  const ExpandableSegment& seg = segment_of(sp, u->ptr);
  const std::uint64_t length = round_up(bytes, seg.page);
  // One page at a time, so each can be unmapped on its own later; each page is claimed against the
  // memory fraction first. A failure undoes this call's pages.
  for (std::uint64_t offset = 0; offset < length; offset += seg.page) {
    bool mapped = false;
    if (claim_reserved(seg.page)) {
      try {
        mapped = backend_.try_map(as_pointer(u->ptr + offset), seg.page);
      } catch (...) {
        unclaim_reserved(seg.page);
        backend_.unmap(as_pointer(u->ptr), offset);
        unclaim_reserved(offset);
        throw;
      }
      if (!mapped) {
        unclaim_reserved(seg.page);
      }
    }
    if (!mapped) {
      backend_.unmap(as_pointer(u->ptr), offset);
      unclaim_reserved(offset);
      return nullptr;
    }
  }
  owners_.assign(u->ptr, length, &sp);
  auto& unmapped = sp.ranges().unmapped[static_cast<std::size_t>(u->pool)];
  unmapped.erase(u);
  if (length < u->size) {
    Block* rest = sp.new_block();
    rest->ptr = u->ptr + length;
    rest->size = u->size - length;
    rest->pool = u->pool;
    rest->mapped = false;
    rest->expandable = true;
    rest->prev = u;
    rest->next = u->next;
    if (u->next != nullptr) {
      u->next->prev = rest;
    }
    u->next = rest;
    u->size = length;
    unmapped.insert(rest);
  }
  u->mapped = true;
  sp.stats.reserved_bytes.update(u->pool, static_cast<std::int64_t>(length));
  add_reserved(static_cast<std::int64_t>(length));
  ++sp.stats.num_device_alloc;
  try_merge(sp, u, u->prev);
  try_merge(sp, u, u->next);
  u->gc_base = sp.gc_clock[static_cast<std::size_t>(u->pool)];
  sp.insert_free(sp.free[static_cast<std::size_t>(u->pool)], u);
  return u;
}

void CachingAllocator::unmap_block(StreamPools& sp, Block* b) {
  const ExpandableSegment& seg = segment_of(sp, b->ptr);
  const std::uintptr_t first = seg.base + round_up(b->ptr - seg.base, seg.page);
  const std::uintptr_t last = seg.base + (b->ptr + b->size - seg.base) / seg.page * seg.page;
  if (first >= last) {
    return;  // no whole page inside
  }
  const auto pool = static_cast<std::size_t>(b->pool);
  sp.erase_free(sp.free[pool], b);
  const auto make_mapped = [&](std::uintptr_t ptr, std::uint64_t size) {
    Block* x = sp.new_block();
    x->ptr = ptr;
    x->size = size;
    x->pool = b->pool;
    x->expandable = true;
    x->gc_base = b->gc_base;
    return x;
  };
  if (first > b->ptr) {  // the partial page before stays mapped and free
    Block* head = make_mapped(b->ptr, first - b->ptr);
    head->prev = b->prev;
    head->next = b;
    if (b->prev != nullptr) {
      b->prev->next = head;
    }
    b->prev = head;
    sp.insert_free(sp.free[pool], head);
  }
  if (last < b->ptr + b->size) {  // and the partial page after
    Block* tail = make_mapped(last, b->ptr + b->size - last);
    tail->next = b->next;
    tail->prev = b;
    if (b->next != nullptr) {
      b->next->prev = tail;
    }
    b->next = tail;
    sp.insert_free(sp.free[pool], tail);
  }
  b->ptr = first;
  b->size = last - first;
  owners_.assign(first, b->size, nullptr);  // before the pages can be mapped again
  backend_.unmap(as_pointer(first), b->size);
  b->mapped = false;
  unclaim_reserved(b->size);
  sp.stats.reserved_bytes.update(b->pool, -static_cast<std::int64_t>(b->size));
  add_reserved(-static_cast<std::int64_t>(b->size));
  ++sp.stats.num_device_free;
  try_merge(sp, b, b->prev);
  try_merge(sp, b, b->next);
  if (b->prev == nullptr && b->next == nullptr) {  // the whole range is unmapped again: give it back
    const ExpandableSegment whole = segment_of(sp, b->ptr);  // every page unmapped, so none in owners_
    backend_.release_address_range(as_pointer(whole.base), whole.size);
    std::erase_if(sp.ranges().segments, [&](const ExpandableSegment& s) { return s.base == whole.base; });
    sp.delete_block(b);
    return;
  }
  sp.ranges().unmapped[pool].insert(b);
}

}  // namespace memstress::caching
