// The caching allocator's slow path, in PyTorch's order: when no cached block fits and no segment can
// be reserved, (1) garbage-collect old cached blocks if a fraction and a threshold are set, (2) free one
// oversize cached segment large enough (only with max_split_size), (3) free every whole cached segment
// of every stream (waiting for pending frees first) and retry once more, then (4) refuse: OutOfMemoryError
// with a full account (try_allocate: no value, and the account only where asked for). One thread at a time
// runs it (slow_mutex_), visiting streams one after another: only those that may give something back (Note
// [Releasing, incrementally], caching_allocator.hpp).

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "harness/alloc/caching/caching_allocator.hpp"
#include "harness/core/error.hpp"
#include "harness/core/units.hpp"

namespace memstress::caching {

void* CachingAllocator::finish_allocation_slow(StreamPools& sp, const Request& r, bool tried_alloc,
                                               std::string* refusal) {
  const std::scoped_lock slow(slow_mutex_);
  // PyTorch completes every stream's pending frees at each allocation; the fast path only does the
  // allocating stream's, so catch up on the others before deciding what is cached.
  process_listed_pending(sp);
  bool collected = false;
  if (config_.garbage_collection_threshold > 0.0 && config_.memory_fraction) {
    collected = garbage_collect();
  }
  {
    const Changing lock(*this, sp);
    Block* block = nullptr;
    // Search and reserve again only when something may have changed since the fast path did (GC ran,
    // or the fast path went straight to GC): a second device call for nothing slows every OOM probe.
    if (collected || !tried_alloc) {
      block = get_free_block(sp, r);
      if (block == nullptr) {
        block = alloc_block(sp, r, false);
      }
    }
    if (block == nullptr && release_available_cached_blocks(sp, r)) {
      block = alloc_block(sp, r, false);
    }
    if (block != nullptr) {
      return finish_allocation(sp, block, r);
    }
  }
  release_cached_blocks();
  {
    const Changing lock(*this, sp);
    if (Block* block = alloc_block(sp, r, true)) {
      return finish_allocation(sp, block, r);
    }
  }
  refuse(r, refusal);
  return nullptr;
}

void CachingAllocator::do_empty_cache() {
  const std::scoped_lock slow(slow_mutex_);
  release_cached_blocks();
}

// Note [Releasing, incrementally]: the streams of a list, taken whole (a stream changed from now on is
// queued again), and put back where a visit did not finish.
void CachingAllocator::process_listed_pending(const StreamPools& sp) {
  std::vector<StreamPools*> listed;
  {
    const std::scoped_lock queue(queue_mutex_);
    listed.swap(with_pending_);
  }
  std::vector<StreamPools*> kept;  // still waiting on events
  std::size_t i = 0;
  try {
    kept.reserve(listed.size());
    for (; i < listed.size(); ++i) {
      StreamPools* other = listed[i];
      visited_streams_.fetch_add(1, std::memory_order_relaxed);
      const std::scoped_lock lock(other->lock);
      if (other != &sp && !other->pending.empty()) {
        changed(*other);  // Note [Statistics, incrementally]
        process_events(*other);
      }
      if (other->pending.empty()) {
        other->pending_listed = false;
      } else {
        kept.push_back(other);
      }
    }
  } catch (...) {
    kept.insert(kept.end(), listed.begin() + static_cast<std::ptrdiff_t>(i), listed.end());
    const std::scoped_lock queue(queue_mutex_);
    with_pending_.insert(with_pending_.end(), kept.begin(), kept.end());
    throw;
  }
  const std::scoped_lock queue(queue_mutex_);
  with_pending_.insert(with_pending_.end(), kept.begin(), kept.end());
}

std::vector<StreamPools*> CachingAllocator::take_unreleased() {
  std::vector<StreamPools*> queued;
  const std::scoped_lock queue(queue_mutex_);
  queued.swap(unreleased_);
  return queued;
}

void CachingAllocator::requeue_unreleased(std::vector<StreamPools*>::const_iterator from,
                                          std::vector<StreamPools*>::const_iterator to) {
  const std::scoped_lock queue(queue_mutex_);
  unreleased_.insert(unreleased_.end(), from, to);
}

void CachingAllocator::release_cached_blocks() {
  num_sync_all_streams_.fetch_add(1, std::memory_order_relaxed);
  // Note [Releasing, incrementally]: the streams that may hold something to give back, in any order (the
  // segments and pages of one stream are released independently of another's).
  const std::vector<StreamPools*> queued = take_unreleased();
  std::vector<StreamPools*> kept;  // never, unless a release leaves something behind
  std::size_t i = 0;
  try {
    for (; i < queued.size(); ++i) {
      StreamPools& sp = *queued[i];
      visited_streams_.fetch_add(1, std::memory_order_relaxed);
      const Changing lock(*this, sp);
      synchronize_and_free_events(sp);
      release_blocks(sp, PoolKind::large);
      release_blocks(sp, PoolKind::small);
      if (sp.nothing_to_release()) {
        sp.unreleased = false;  // the next change queues it again
      } else {
        kept.push_back(&sp);
      }
    }
  } catch (...) {
    kept.insert(kept.end(), queued.begin() + static_cast<std::ptrdiff_t>(i), queued.end());
    requeue_unreleased(kept.begin(), kept.end());
    throw;
  }
  requeue_unreleased(kept.begin(), kept.end());
}

void CachingAllocator::release_blocks(StreamPools& sp, PoolKind pool) {
  unpark(sp);
  // Note [Releasing, incrementally]: the free set's blocks that go back, in its order.
  std::vector<Block*> whole;
  std::vector<Block*> expandable;
  for (Block* b : sp.releasable) {
    if (b->pool != pool) {
      continue;
    }
    examined_blocks_.fetch_add(1, std::memory_order_relaxed);
    if (b->expandable) {
      expandable.push_back(b);
    } else {
      whole.push_back(b);  // only whole, fully free segments go back to the device
    }
  }
  for (Block* b : whole) {
    release_segment(sp, b);
  }
  if (!expandable.empty()) {
    backend_.synchronize();  // work enqueued before the frees may still touch these pages
    for (Block* b : expandable) {
      unmap_block(sp, b);
    }
  }
}

void CachingAllocator::release_segment(StreamPools& sp, Block* b) {
  sp.erase_free(sp.free[static_cast<std::size_t>(b->pool)], b);
  // Forget the owner before the device may hand the range to another stream's fast path.
  owners_.assign(b->ptr, b->size, nullptr);
  backend_.release(reinterpret_cast<void*>(b->ptr), b->size);  // NOLINT(performance-no-int-to-ptr)
  unclaim_reserved(b->size);
  const auto size = static_cast<std::int64_t>(b->size);
  add_reserved(-size);
  sp.stats.segment.update(b->pool, -1);
  sp.stats.reserved_bytes.update(b->pool, -size);
  if (b->size >= config_.max_split_size) {
    sp.stats.oversize_segments.update(-1);
  }
  ++sp.stats.num_device_free;
  sp.delete_block(b);
}

bool CachingAllocator::release_available_cached_blocks(StreamPools& sp, const Request& r) {
  if (config_.max_split_size == AllocConfig::kUnlimited) {
    return false;
  }
  unpark(sp);
  auto& pool = sp.free[static_cast<std::size_t>(r.pool)];
  const std::uint64_t wanted = std::max(r.size, config_.max_split_size);
  auto it = pool.lower_bound(SizeKey{wanted});
  if (it != pool.end() && !(*it)->expandable && !(*it)->is_split()) {
    release_segment(sp, *it);  // the smallest single oversize segment that is large enough
    return true;
  }
  // Otherwise free oversize segments from the largest down until enough is released.
  std::vector<Block*> victims;
  std::uint64_t released = 0;
  for (auto rit = std::make_reverse_iterator(it); rit != pool.rend() && released < wanted; ++rit) {
    Block* b = *rit;
    examined_blocks_.fetch_add(1, std::memory_order_relaxed);
    if (b->size < config_.max_split_size) {
      break;
    }
    if (!b->expandable && !b->is_split()) {
      victims.push_back(b);
      released += b->size;
    }
  }
  for (Block* b : victims) {
    release_segment(sp, b);
  }
  return released >= wanted;
}

// PyTorch's garbage collection: while reserved memory is above threshold x allowed, free the cached,
// unsplit large-pool segments whose age (get_free_block calls since they were freed) is at least the
// average age — one full pass each round, not stopping at the target, so that GC does not run again at
// once. memstress keeps one age clock per stream, so ages compare within a stream; the target is
// device-wide. Returns whether anything was freed.
bool CachingAllocator::garbage_collect() {
  const auto threshold =
      static_cast<std::uint64_t>(config_.garbage_collection_threshold * static_cast<double>(allowed_max_));
  const std::uint64_t reserved = total_reserved_.load(std::memory_order_relaxed);
  if (reserved <= threshold) {
    return false;
  }
  const std::uint64_t target = reserved - threshold;
  std::uint64_t reclaimed = 0;
  // Note [Releasing, incrementally]: the streams that may hold a cached segment, in PyTorch's order (that of
  // their creation), which decides where collection stops; the others have none.
  std::vector<StreamPools*> queued = take_unreleased();
  std::sort(queued.begin(), queued.end(),
            [](const StreamPools* a, const StreamPools* b) { return a->order < b->order; });
  std::vector<StreamPools*> kept;  // visited, with something left to release
  std::size_t i = 0;
  try {
    kept.reserve(queued.size());
    for (; i < queued.size() && reclaimed < target; ++i) {
      StreamPools* sp = queued[i];
      visited_streams_.fetch_add(1, std::memory_order_relaxed);
      const Changing lock(*this, *sp);
      unpark(*sp);
      const std::uint64_t clock = sp->gc_clock[static_cast<std::size_t>(PoolKind::large)];
      bool freed_any = true;
      while (reclaimed < target && freed_any) {
        // The large pool's whole segments, in the free set's order.
        std::vector<Block*> candidates;
        std::uint64_t total_age = 0;
        for (Block* b : sp->releasable) {
          if (b->pool == PoolKind::large && !b->expandable) {
            examined_blocks_.fetch_add(1, std::memory_order_relaxed);
            candidates.push_back(b);
            total_age += clock - b->gc_base;
          }
        }
        if (candidates.empty()) {
          break;
        }
        const double average = static_cast<double>(total_age) / static_cast<double>(candidates.size());
        freed_any = false;
        for (Block* b : candidates) {
          if (static_cast<double>(clock - b->gc_base) >= average) {
            reclaimed += b->size;
            release_segment(*sp, b);
            freed_any = true;
          }
        }
      }
      if (sp->nothing_to_release()) {
        sp->unreleased = false;  // the next change queues it again
      } else {
        kept.push_back(sp);
      }
    }
  } catch (...) {
    kept.insert(kept.end(), queued.begin() + static_cast<std::ptrdiff_t>(i), queued.end());
    requeue_unreleased(kept.begin(), kept.end());
    throw;
  }
  kept.insert(kept.end(), queued.begin() + static_cast<std::ptrdiff_t>(i), queued.end());
  requeue_unreleased(kept.begin(), kept.end());
  return reclaimed != 0;
}

void CachingAllocator::refuse(const Request& r, std::string* refusal) {
  num_ooms_.fetch_add(1, std::memory_order_relaxed);
  if (refusal == nullptr) {
    return;
  }
  const MemInfo mem = backend_.mem_info();
  // memory_stats()'s figures, without building all of them: a replay at capacity refuses one request after
  // another, and the whole table cost more than the rest of a refusal.
  std::uint64_t allocated = 0;
  std::uint64_t reserved = 0;
  std::uint64_t largest = 0;
  {
    const std::scoped_lock lock(stats_mutex_);
    const Totals totals = read_totals();  // Note [Statistics, incrementally]
    allocated = static_cast<std::uint64_t>(totals.stats.allocated_bytes.current_all());
    reserved = static_cast<std::uint64_t>(totals.stats.reserved_bytes.current_all());
    largest = totals.largest;
  }
  const std::uint64_t cached = reserved - allocated;
  const std::uint64_t outside = mem.total - mem.free > reserved ? mem.total - mem.free - reserved : 0;
  const DeviceInfo& dev = backend_.info();

  std::string message = fmt::format(
      "{} ({}): out of memory: tried to allocate {} (rounded to {} in the {} pool; a new segment would take "
      "{}). "
      "The device has {} in total, {} free",
      dev.label(), dev.name, human_bytes(r.bytes), human_bytes(r.size),
      r.pool == PoolKind::small ? "small" : "large", human_bytes(r.alloc_size), human_bytes(mem.total),
      human_bytes(mem.free));
  if (config_.memory_fraction) {
    message += fmt::format("; per_process_memory_fraction {} allows this allocator {}",
                           *config_.memory_fraction, human_bytes(allowed_max_));
  }
  message += fmt::format(
      ". This allocator ({}) has {} reserved: {} allocated and {} cached but unallocated, the largest free "
      "cached "
      "block {}",
      name(), human_bytes(reserved), human_bytes(allocated), human_bytes(cached), human_bytes(largest));
  message += fmt::format(
      ". Outside this allocator, {} of the device is in use (other allocators, processes, "
      "the CUDA context). ",
      human_bytes(outside));
  // Which setting would help.
  if (config_.memory_fraction && reserved + r.alloc_size > allowed_max_ && mem.free >= r.alloc_size) {
    message += "The memory fraction is the limit, not the device: raise per_process_memory_fraction.";
  } else if (cached >= r.size) {
    message += fmt::format(
        "Enough memory is cached in total but in pieces too small for this request (fragmentation): {}"
        "max_split_size_mb:N stops large cached blocks being split for small requests, and emptying the "
        "cache "
        "between phases returns whole free segments.",
        config_.expandable_segments ? "" : "expandable_segments:True lets segments grow in place instead, ");
  } else {
    // Expandable segments grow in whole pages; a new segment takes alloc_size.
    const std::uint64_t page = r.pool == PoolKind::small ? kSmallBuffer : kLargeBuffer;
    const std::uint64_t needed =
        config_.expandable_segments ? (r.size + page - 1) / page * page : r.alloc_size;
    const std::uint64_t available = mem.free + cached;
    message += needed > available
                   ? fmt::format(
                         "The device is full: {} more would be needed; lower the batch size or free memory "
                         "held elsewhere.",
                         human_bytes(needed - available))
                   : fmt::format(
                         "The device is full: the request needs {} in one piece and only {} is free or "
                         "cached; lower the batch size or free memory held elsewhere.",
                         human_bytes(needed), human_bytes(available));
  }
  *refusal = std::move(message);
}

}  // namespace memstress::caching
