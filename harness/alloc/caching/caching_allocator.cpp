// The caching allocator's construction, lookups, hot paths (allocate, free, record_stream) and
// statistics. The slow path (release and retry, GC, OOM) is in caching_release.cpp, expandable segments
// in caching_expandable.cpp, the snapshot in caching_snapshot.cpp.

#include "harness/alloc/caching/caching_allocator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/core/error.hpp"

namespace memstress::caching {

StreamPools::StreamPools(StreamRef s, std::size_t created)
    : stream(s),
      order(created),
      free{std::pmr::set<Block*, BySize>(&memory), std::pmr::set<Block*, BySize>(&memory)},
      releasable(&memory) {}

Block* StreamPools::new_block() {
  return std::pmr::polymorphic_allocator<Block>(&memory).new_object<Block>();
}

void StreamPools::delete_block(Block* block) noexcept {
  std::pmr::polymorphic_allocator<Block>(&memory).delete_object(block);
}

void StreamPools::insert_free(FreeSet& pool, Block* block) {
  if (spare.empty()) {
    pool.insert(block);
  } else {
    spare.value() = block;
    auto result = pool.insert(std::move(spare));
    if (!result.inserted) {  // never for distinct blocks (the key is size, then address): keep the node
      spare = std::move(result.node);
    }
  }
  if (releasable_block(*block)) {
    try {
      releasable.insert(block);
    } catch (...) {
      pool.erase(block);
      throw;
    }
  }
}

void StreamPools::erase_free(FreeSet& pool, FreeSet::iterator it) {
  if (releasable_block(**it)) {
    releasable.erase(*it);
  }
  if (spare.empty()) {
    spare = pool.extract(it);
  } else {
    pool.erase(it);
  }
}

void StreamPools::erase_free(FreeSet& pool, Block* block) {
  if (const auto it = pool.find(block); it != pool.end()) {
    erase_free(pool, it);
  }
}

bool StreamPools::releasable_block(const Block& b) const noexcept {
  if (!b.expandable) {
    return !b.is_split();
  }
  // release_blocks unmaps the whole pages inside the block (unmap_block): pages count from the segment's
  // base.
  const std::uint64_t page = b.pool == PoolKind::small ? kSmallBuffer : kLargeBuffer;
  if (b.size < page || b.size >= 2 * page) {
    return b.size >= page;
  }
  if (expandable == nullptr) {
    return false;  // never: an expandable block's stream has its segments
  }
  for (const ExpandableSegment& seg : expandable->segments) {
    if (b.ptr >= seg.base && b.ptr < seg.base + seg.size) {
      const std::uint64_t first = (b.ptr - seg.base + page - 1) / page * page;
      const std::uint64_t last = (b.ptr + b.size - seg.base) / page * page;
      return first < last;
    }
  }
  return false;
}

CachingAllocator::CachingAllocator(DeviceBackend& backend, AllocConfig config)
    : backend_(backend),
      config_(std::move(config)),
      allowed_max_(config_.memory_fraction
                       ? static_cast<std::uint64_t>(std::floor(*config_.memory_fraction *
                                                               static_cast<double>(backend.info().capacity)))
                       : AllocConfig::kUnlimited) {}

CachingAllocator::~CachingAllocator() {
  std::size_t leaked = 0;
  for (StreamPools* sp : all_pools()) {
    const std::scoped_lock lock(sp->lock);
    try {
      synchronize_and_free_events(*sp);  // unparks first
    } catch (const std::exception& e) {
      std::fprintf(stderr, "memstress: warning: caching allocator: waiting for events: %s\n", e.what());
    }
    std::vector<Block*> blocks;  // a vector, not a hash set: a doctor destroys allocators of 200,000 streams
    for (const auto& pool : sp->free) {
      blocks.insert(blocks.end(), pool.begin(), pool.end());
    }
    if (sp->expandable != nullptr) {
      for (const auto& pool : sp->expandable->unmapped) {
        blocks.insert(blocks.end(), pool.begin(), pool.end());
      }
    }
    sp->live.for_each([&](std::uintptr_t, Block* block) { blocks.push_back(block); });
    std::sort(blocks.begin(), blocks.end());
    blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
    leaked += sp->live.size();
    for (Block* b : blocks) {
      if (b->prev == nullptr && !b->expandable) {
        std::uint64_t size = 0;
        for (const Block* x = b; x != nullptr; x = x->next) {
          size += x->size;
        }
        backend_.release(reinterpret_cast<void*>(b->ptr), size);  // NOLINT(performance-no-int-to-ptr)
      }
    }
    if (sp->expandable != nullptr) {
      for (const ExpandableSegment& seg : sp->expandable->segments) {
        backend_.release_address_range(reinterpret_cast<void*>(seg.base), seg.size);  // NOLINT
      }
    }
    for (Block* b : blocks) {
      sp->delete_block(b);
    }
  }
  if (leaked != 0) {
    std::fprintf(stderr, "memstress: warning: caching allocator destroyed with %zu blocks still allocated\n",
                 leaked);
  }
}

std::string_view CachingAllocator::name() const noexcept {
  return config_.expandable_segments ? "expandable" : "caching";
}

StreamPools& CachingAllocator::add_pools(StreamRef stream) {
  const std::scoped_lock lock(pools_mutex_);
  if (StreamPools* sp = streams_.find(stream.id)) {
    return *sp;
  }
  pools_.push_back(std::make_unique<StreamPools>(stream, pools_.size()));
  return *streams_.insert(stream.id, pools_.back().get());
}

std::vector<StreamPools*> CachingAllocator::all_pools() const {
  const std::scoped_lock lock(pools_mutex_);
  visited_streams_.fetch_add(pools_.size(), std::memory_order_relaxed);  // Note [Releasing, incrementally]
  std::vector<StreamPools*> out;
  out.reserve(pools_.size());
  for (const auto& sp : pools_) {
    out.push_back(sp.get());
  }
  return out;
}

void CachingAllocator::add_reserved(std::int64_t delta) noexcept {
  const std::int64_t now = reserved_current_.fetch_add(delta, std::memory_order_relaxed) + delta;
  if (delta > 0) {
    raise_peak(reserved_peak_, now);
  }
}

void* CachingAllocator::do_allocate(std::size_t bytes, StreamRef stream) {
  std::string refusal;
  const std::optional<void*> p = do_try_allocate(bytes, stream, &refusal);
  if (!p) {
    throw OutOfMemoryError(refusal);
  }
  return *p;
}

std::optional<void*> CachingAllocator::do_try_allocate(std::size_t bytes, StreamRef stream,
                                                       std::string* refusal) {
  if (bytes == 0) {
    return nullptr;
  }
  note_thread();
  if (bytes >= kMaxRequest) {  // PyTorch's front end refuses these too; rounding would overflow
    num_ooms_.fetch_add(1, std::memory_order_relaxed);
    if (refusal != nullptr) {
      *refusal = fmt::format("{} ({}): out of memory: tried to allocate {} bytes, more than 1 EiB",
                             backend_.info().label(), backend_.info().name, bytes);
    }
    return std::nullopt;
  }
  Request r;
  r.bytes = bytes;
  r.size = round_size(bytes, config_);
  r.pool = pool_for(r.size);
  r.alloc_size = allocation_size(r.size);
  StreamPools& sp = pools_for(stream);
  bool tried_alloc = false;
  {
    const Changing lock(*this, sp);
    if (sp.parked != nullptr) {
      if (void* p = take_parked(sp, r)) {  // Note [Parked free]
        return p;
      }
      unpark(sp);
    }
    process_events(sp);
    Block* block = get_free_block(sp, r);
    // Garbage collection, when configured, runs before a new segment is reserved (slow path).
    const bool gc_first = config_.garbage_collection_threshold > 0.0 && config_.memory_fraction &&
                          static_cast<double>(total_reserved_.load(std::memory_order_relaxed)) >
                              config_.garbage_collection_threshold * static_cast<double>(allowed_max_);
    if (block == nullptr && !gc_first) {
      block = alloc_block(sp, r, false);
    }
    if (block != nullptr) {
      return finish_allocation(sp, block, r);
    }
    tried_alloc = !gc_first;
  }
  if (void* p = finish_allocation_slow(sp, r, tried_alloc, refusal)) {
    return p;
  }
  return std::nullopt;
}

Block* CachingAllocator::get_free_block(StreamPools& sp, const Request& r) {
  unpark(sp);
  auto& pool = sp.free[static_cast<std::size_t>(r.pool)];
  ++sp.gc_clock[static_cast<std::size_t>(r.pool)];
  auto it = pool.lower_bound(SizeKey{r.size});
  if (it == pool.end()) {
    return nullptr;
  }
  if ((*it)->expandable) {
    if (config_.expandable_segments) {
      // Prefer the block that can grow least (its size plus the unmapped stretch after it).
      const auto grow = [](const Block* b) {
        return b->size + (b->next != nullptr && !b->next->mapped ? b->next->size : 0);
      };
      for (auto next = std::next(it); next != pool.end() && (*next)->expandable && grow(*next) < grow(*it);
           next = std::next(it)) {
        it = next;
      }
    } else {
      while (it != pool.end() && (*it)->expandable) {
        ++it;
      }
      if (it == pool.end()) {
        return nullptr;
      }
    }
  }
  Block* b = *it;
  // Never hand an oversize block to a normal request, nor a much larger one to an oversize request.
  if (r.size < config_.max_split_size && b->size >= config_.max_split_size) {
    return nullptr;
  }
  if (r.size >= config_.max_split_size && b->size >= r.size + config_.max_non_split_rounding) {
    return nullptr;
  }
  sp.erase_free(pool, it);
  return b;
}

bool CachingAllocator::claim_reserved(std::uint64_t bytes) noexcept {
  std::uint64_t current = total_reserved_.load(std::memory_order_relaxed);
  do {
    if (config_.memory_fraction && current + bytes > allowed_max_) {
      return false;
    }
  } while (!total_reserved_.compare_exchange_weak(current, current + bytes, std::memory_order_relaxed));
  return true;
}

void CachingAllocator::unclaim_reserved(std::uint64_t bytes) noexcept {
  total_reserved_.fetch_sub(bytes, std::memory_order_relaxed);
}

Block* CachingAllocator::alloc_block(StreamPools& sp, const Request& r, bool retry) {
  if (retry) {
    num_alloc_retries_.fetch_add(1, std::memory_order_relaxed);
  }
  if (config_.expandable_segments) {
    // PyTorch checks the fraction against a whole segment's size; the pages actually mapped are then
    // claimed one by one (map_block), which keeps the cap exact when threads race.
    if (config_.memory_fraction &&
        total_reserved_.load(std::memory_order_relaxed) + r.alloc_size > allowed_max_) {
      return nullptr;
    }
    return try_allocate_expandable(sp, r);
  }
  if (!claim_reserved(r.alloc_size)) {
    return nullptr;  // the fraction refuses before the device is asked
  }
  void* ptr = backend_.try_reserve(r.alloc_size);
  if (ptr == nullptr) {
    unclaim_reserved(r.alloc_size);
    return nullptr;
  }
  const auto address = reinterpret_cast<std::uintptr_t>(ptr);
  Block* b = nullptr;
  try {
    if (!PageMap<StreamPools>::aligned(address, r.alloc_size)) {
      throw std::runtime_error(
          fmt::format("caching allocator: the device returned a {}-byte segment at {} that is not 2 MiB "
                      "aligned; cannot track it",
                      r.alloc_size, ptr));
    }
    b = sp.new_block();
    owners_.assign(address, r.alloc_size, &sp);
  } catch (...) {
    if (b != nullptr) {
      sp.delete_block(b);
    }
    backend_.release(ptr, r.alloc_size);
    unclaim_reserved(r.alloc_size);
    throw;
  }
  b->ptr = address;
  b->size = r.alloc_size;
  b->pool = r.pool;
  const auto size = static_cast<std::int64_t>(r.alloc_size);
  sp.stats.segment.update(r.pool, 1);
  sp.stats.reserved_bytes.update(r.pool, size);
  add_reserved(size);
  if (r.alloc_size >= config_.max_split_size) {
    sp.stats.oversize_segments.update(1);
  }
  ++sp.stats.num_device_alloc;
  return b;
}

void* CachingAllocator::finish_allocation(StreamPools& sp, Block* b, const Request& r) {
  const bool was_split = b->is_split();
  const auto pool = r.pool;
  if (should_split(*b, r.size)) {
    // The caller gets the low part; the remainder goes back to the pool.
    Block* rest = sp.new_block();
    rest->ptr = b->ptr + r.size;
    rest->size = b->size - r.size;
    rest->pool = b->pool;
    rest->expandable = b->expandable;
    rest->prev = b;
    rest->next = b->next;
    if (b->next != nullptr) {
      b->next->prev = rest;
    }
    b->next = rest;
    b->size = r.size;
    rest->gc_base = sp.gc_clock[static_cast<std::size_t>(pool)];
    sp.insert_free(sp.free[static_cast<std::size_t>(pool)], rest);
    return hand_out(sp, b, r, was_split, rest);
  }
  return hand_out(sp, b, r, was_split, nullptr);
}

void* CachingAllocator::hand_out(StreamPools& sp, Block* b, const Request& r, bool was_split,
                                 const Block* rest) {
  const auto pool = r.pool;
  if (!b->expandable) {
    if (rest != nullptr) {
      if (was_split) {
        sp.stats.inactive_split_bytes.decrease(pool, static_cast<std::int64_t>(b->size));
      } else {
        sp.stats.inactive_split.increase(pool, 1);
        sp.stats.inactive_split_bytes.increase(pool, static_cast<std::int64_t>(rest->size));
      }
    } else if (was_split) {
      sp.stats.inactive_split.decrease(pool, 1);
      sp.stats.inactive_split_bytes.decrease(pool, static_cast<std::int64_t>(b->size));
    }
  }
  b->allocated = true;
  b->requested = r.bytes;
  sp.live.insert(b->ptr, b);
  const auto size = static_cast<std::int64_t>(b->size);
  sp.stats.allocation.increase(pool, 1);
  sp.stats.allocated_bytes.increase(pool, size);
  sp.stats.active.increase(pool, 1);
  sp.stats.active_bytes.increase(pool, size);
  sp.stats.requested_bytes.increase(pool, static_cast<std::int64_t>(r.bytes));
  if (b->size >= config_.max_split_size) {
    sp.stats.oversize_allocations.increase(1);
  }
  add_allocated(size);
  return reinterpret_cast<void*>(b->ptr);  // NOLINT(performance-no-int-to-ptr)
}

void CachingAllocator::do_deallocate(void* ptr) {
  note_thread();
  StreamPools* sp = owner_of(ptr);
  if (sp == nullptr) {
    throw InputError(fmt::format("{} allocator: deallocate of {}, which it did not allocate", name(), ptr));
  }
  const Changing lock(*this, *sp);
  unpark(*sp);
  Block* b = sp->live.erase(reinterpret_cast<std::uintptr_t>(ptr));
  if (b == nullptr) {
    throw InputError(
        fmt::format("{} allocator: deallocate of {}, which is not allocated (freed twice?)", name(), ptr));
  }
  b->allocated = false;
  const auto size = static_cast<std::int64_t>(b->size);
  sp->stats.allocation.decrease(b->pool, 1);
  sp->stats.allocated_bytes.decrease(b->pool, size);
  if (b->size >= config_.max_split_size) {
    sp->stats.oversize_allocations.decrease(1);
  }
  add_allocated(-size);
  if (b->stream_uses.empty()) {
    const FreePlan plan = plan_free(*b);
    count_free(*sp, *b, plan);
    if (!plan.merge_prev && !config_.expandable_segments) {  // Note [Parked free]
      sp->parked = b;
      sp->parked_merges_next = plan.merge_next;
    } else {
      merge_free(*sp, b, plan);
    }
    return;
  }
  // Used on other streams: free once the work enqueued on them by now has completed.
  std::vector<StreamRef> uses;
  uses.swap(b->stream_uses);  // cleared even if recording an event throws
  for (const StreamRef use : uses) {
    const EventHandle event = backend_.record_event(use);
    sp->pending.emplace_back(event, b);
    ++b->event_count;
  }
  if (!sp->pending_listed) {  // Note [Releasing, incrementally]
    const std::scoped_lock queue(queue_mutex_);
    with_pending_.push_back(sp);
    sp->pending_listed = true;
  }
}

void CachingAllocator::do_record_stream(void* ptr, StreamRef stream) {
  StreamPools* sp = owner_of(ptr);
  if (sp == nullptr) {
    throw InputError(
        fmt::format("{} allocator: record_stream of {}, which it did not allocate", name(), ptr));
  }
  const std::scoped_lock lock(sp->lock);
  Block* b = sp->live.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (b == nullptr) {
    throw InputError(fmt::format("{} allocator: record_stream of {}, which is not allocated", name(), ptr));
  }
  if (stream != sp->stream &&
      std::find(b->stream_uses.begin(), b->stream_uses.end(), stream) == b->stream_uses.end()) {
    b->stream_uses.push_back(stream);
  }
}

void CachingAllocator::free_block(StreamPools& sp, Block* b) {
  const FreePlan plan = plan_free(*b);
  count_free(sp, *b, plan);
  merge_free(sp, b, plan);
}

void CachingAllocator::count_free(StreamPools& sp, const Block& b, FreePlan plan) {
  // After the merges the block spans its free neighbours; it is still split if anything lies beyond them.
  std::uint64_t merged = b.size;
  std::int64_t split_count = 0;
  std::int64_t split_bytes = 0;
  const Block* before = b.prev;
  const Block* after = b.next;
  if (plan.merge_prev) {
    --split_count;
    split_bytes -= static_cast<std::int64_t>(before->size);
    merged += before->size;
    before = before->prev;
  }
  if (plan.merge_next) {
    --split_count;
    split_bytes -= static_cast<std::int64_t>(after->size);
    merged += after->size;
    after = after->next;
  }
  if (before != nullptr || after != nullptr) {
    ++split_count;
    split_bytes += static_cast<std::int64_t>(merged);
  }
  if (!b.expandable) {
    sp.stats.inactive_split.update(b.pool, split_count);
    sp.stats.inactive_split_bytes.update(b.pool, split_bytes);
  }
  sp.stats.active.decrease(b.pool, 1);
  sp.stats.active_bytes.decrease(b.pool, static_cast<std::int64_t>(b.size));
  sp.stats.requested_bytes.decrease(b.pool, static_cast<std::int64_t>(b.requested));
}

void CachingAllocator::merge_free(StreamPools& sp, Block* b, FreePlan plan) {
  if (plan.merge_prev) {
    try_merge(sp, b, b->prev);
  }
  if (plan.merge_next) {
    try_merge(sp, b, b->next);
  }
  b->gc_base = sp.gc_clock[static_cast<std::size_t>(b->pool)];
  sp.insert_free(sp.free[static_cast<std::size_t>(b->pool)], b);
}

void* CachingAllocator::take_parked(StreamPools& sp, const Request& r) {
  Block* b = sp.parked;
  if (r.size != b->size || r.pool != b->pool || !sp.pending.empty()) {
    return nullptr;
  }
  Block* rest = sp.parked_merges_next ? b->next : nullptr;
  const std::uint64_t merged = b->size + (rest != nullptr ? rest->size : 0);
  if (merged >= config_.max_split_size) {
    return nullptr;  // get_free_block's oversize rules: leave them to it
  }
  if (rest != nullptr && !should_split(b->pool, merged, r.size)) {
    return nullptr;  // the merged block would be handed out whole
  }
  // Best fit over the free set as the merge would leave it (without `rest`, with the merged block).
  const auto& pool = sp.free[static_cast<std::size_t>(r.pool)];
  auto it = pool.lower_bound(SizeKey{r.size});
  if (it != pool.end() && *it == rest) {
    ++it;
  }
  if (it != pool.end() && ((*it)->size < merged || ((*it)->size == merged && (*it)->ptr < b->ptr))) {
    return nullptr;
  }
  // What get_free_block and finish_allocation would leave: the clock advanced, the merged block (split
  // if anything lies beyond it) split again into `b` and `rest`, aged now.
  sp.parked = nullptr;
  const std::uint64_t clock = ++sp.gc_clock[static_cast<std::size_t>(r.pool)];
  const bool was_split = b->prev != nullptr || (rest != nullptr ? rest->next : b->next) != nullptr;
  if (rest != nullptr) {
    rest->gc_base = clock;
  }
  return hand_out(sp, b, r, was_split, rest);
}

std::uint64_t CachingAllocator::try_merge(StreamPools& sp, Block* dst, Block* src) {
  if (!mergeable(*dst, src)) {
    return 0;
  }
  if (src->mapped) {
    auto& pool = sp.free[static_cast<std::size_t>(src->pool)];
    if (const auto it = pool.find(src); it != pool.end()) {
      sp.erase_free(pool, it);
    }
  } else {
    sp.ranges().unmapped[static_cast<std::size_t>(src->pool)].erase(src);
  }
  if (dst->prev == src) {
    dst->ptr = src->ptr;
    dst->prev = src->prev;
    if (dst->prev != nullptr) {
      dst->prev->next = dst;
    }
  } else {
    dst->next = src->next;
    if (dst->next != nullptr) {
      dst->next->prev = dst;
    }
  }
  const std::uint64_t merged = src->size;
  dst->size += merged;
  sp.delete_block(src);
  return merged;
}

// The pending list is a vector (a deque allocates 576 bytes for every stream, most of which never has a
// pending free): entries leave it in order, those still waiting moved down over them.
void CachingAllocator::process_pending(StreamPools& sp) {
  unpark(sp);
  auto& pending = sp.pending;
  std::size_t kept = 0;
  std::size_t i = 0;
  bool taken = false;  // the entry at i has left the list (its event released)
  try {
    for (; i < pending.size(); ++i) {
      taken = false;
      if (!backend_.event_complete(pending[i].first)) {
        pending[kept++] = pending[i];
        continue;
      }
      backend_.release_event(pending[i].first);
      taken = true;
      Block* b = pending[i].second;
      if (--b->event_count == 0) {
        free_block(sp, b);
      }
    }
  } catch (...) {  // those that completed have left the list
    pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(kept),
                  pending.begin() + static_cast<std::ptrdiff_t>(taken ? i + 1 : i));
    throw;
  }
  pending.resize(kept);
}

void CachingAllocator::synchronize_and_free_events(StreamPools& sp) {
  unpark(sp);
  auto& pending = sp.pending;
  std::size_t i = 0;
  try {
    for (; i < pending.size(); ++i) {
      const auto [event, b] = pending[i];
      backend_.synchronize_event(event);
      backend_.release_event(event);
      if (--b->event_count == 0) {
        free_block(sp, b);
      }
    }
  } catch (...) {  // the entry being processed has left the list, as every one before it
    pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(i + 1));
    throw;
  }
  pending.clear();
}

void CachingAllocator::changed(StreamPools& sp) const {
  // Note [Statistics, incrementally]: `counted` and `unreleased` are the stream's, under its lock, which the
  // caller holds; the reset flag is cleared by readers before they take it.
  const bool queue_read = sp.counted;
  const bool queue_reset = !sp.unreset.load(std::memory_order_relaxed) && !sp.unreset.exchange(true);
  const bool queue_release = !sp.unreleased;  // Note [Releasing, incrementally]
  if (!queue_read && !queue_reset && !queue_release) {
    return;
  }
  const std::scoped_lock lock(queue_mutex_);
  bool reset_queued = false;
  try {
    if (queue_reset) {
      unreset_.push_back(&sp);
      reset_queued = true;
    }
    if (queue_release) {
      unreleased_.push_back(&sp);
      sp.unreleased = true;
    }
    if (queue_read) {
      unread_.push_back(&sp);
      // Out of the totals until the next read puts its figures, as they are then, back in.
      totals_ -= sp.stats;
      if (sp.read_largest > 0) {
        largest_.erase(largest_.find(sp.read_largest));
        sp.read_largest = 0;
      }
      sp.counted = false;
    }
  } catch (...) {  // not queued: the next change queues it again (a set flag would hide it for good)
    if (queue_reset && !reset_queued) {
      sp.unreset.store(false);
    }
    throw;  // the change does not happen (Changing's constructor throws)
  }
}

CachingAllocator::Totals CachingAllocator::read_totals() const {
  Totals out;
  std::vector<StreamPools*> queued;
  {
    const std::scoped_lock lock(queue_mutex_);
    queued.swap(unread_);
    out.stats = totals_;
    out.largest = largest_.empty() ? 0 : *largest_.rbegin();
  }
  std::size_t i = 0;
  try {
    for (; i < queued.size(); ++i) {
      StreamPools& sp = *queued[i];
      const std::scoped_lock lock(sp.lock);
      unpark(sp);  // Note [Parked free]: what is read is PyTorch's order
      std::uint64_t largest = 0;
      for (const auto& pool : sp.free) {
        if (!pool.empty()) {
          largest = std::max(largest, (*pool.rbegin())->size);
        }
      }
      {
        const std::scoped_lock queue(queue_mutex_);
        if (largest > 0) {
          largest_.insert(largest);
        }
        totals_ += sp.stats;
        sp.read_largest = largest;
        sp.counted = true;
      }
      out.stats += sp.stats;
      out.largest = std::max(out.largest, largest);
    }
  } catch (...) {  // the streams not counted yet stay queued
    const std::scoped_lock lock(queue_mutex_);
    unread_.insert(unread_.end(), queued.begin() + static_cast<std::ptrdiff_t>(i), queued.end());
    throw;
  }
  return out;
}

MemoryStats CachingAllocator::memory_stats() const {
  Totals totals;
  {
    const std::scoped_lock lock(stats_mutex_);
    totals = read_totals();  // Note [Statistics, incrementally]
  }
  std::size_t streams_seen = 0;
  {
    const std::scoped_lock lock(pools_mutex_);
    streams_seen = pools_.size();
  }
  MemoryStats out;
  totals.stats.export_to(out);
  const bool one_thread = !concurrent_.load(std::memory_order_relaxed);
  if (one_thread) {
    out["allocated_bytes.all.peak"] = allocated_peak_.load(std::memory_order_relaxed);
  }
  out["reserved_bytes.all.peak"] = reserved_peak_.load(std::memory_order_relaxed);
  // Note [Statistics]: with one stream every peak is exact; with several, allocated_bytes.all.peak and
  // reserved_bytes.all.peak stay exact (while one thread drives the allocator) and the others are sums.
  out["peaks_exact"] = streams_seen == 1 ? 1 : 0;
  out["byte_peaks_exact"] = one_thread ? 1 : 0;
  out["largest_free_block_bytes"] = static_cast<std::int64_t>(totals.largest);
  out["num_alloc_retries"] = num_alloc_retries_.load(std::memory_order_relaxed);
  out["num_ooms"] = num_ooms_.load(std::memory_order_relaxed);
  out["num_sync_all_streams"] = num_sync_all_streams_.load(std::memory_order_relaxed);
  out["max_split_size"] = config_.max_split_size == AllocConfig::kUnlimited
                              ? -1
                              : static_cast<std::int64_t>(config_.max_split_size);
  return out;
}

void CachingAllocator::reset_peak_stats() {
  {
    const std::scoped_lock stats(stats_mutex_);
    std::vector<StreamPools*> queued;
    {
      const std::scoped_lock lock(queue_mutex_);
      queued.swap(unreset_);
    }
    // The others have not changed since the last reset: their peaks are their currents already.
    for (StreamPools* sp : queued) {
      sp->unreset.store(false);
      const std::scoped_lock lock(sp->lock);
      if (sp->counted) {
        const std::scoped_lock queue(queue_mutex_);
        totals_ -= sp->stats;
        sp->stats.reset_peaks();
        totals_ += sp->stats;
      } else {
        sp->stats.reset_peaks();  // the next read counts it
      }
    }
  }
  allocated_peak_.store(allocated_current_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  reserved_peak_.store(reserved_current_.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

std::uint64_t CachingAllocator::largest_free_block() const {
  const std::scoped_lock lock(stats_mutex_);
  return read_totals().largest;
}

}  // namespace memstress::caching
