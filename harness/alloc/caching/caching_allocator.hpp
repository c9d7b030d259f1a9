#pragma once

// The shared caching allocator: PyTorch's CUDA caching allocator, rebuilt so that recorded PyTorch
// traces replay with the same behaviour, and made to scale across threads.
//
// Note [Behaviour]. Sizing, pools, best fit, splitting, merging, max_split_size, roundup_power2_divisions,
// garbage_collection_threshold, the memory fraction, the release-and-retry order on failure, pending
// frees for record_stream, expandable segments and the statistics all follow PyTorch (sizing.hpp and
// the comments at each step say which rule). Blocks belong to the stream they were allocated on and are
// only reused on it.
//
// Note [Scaling]. PyTorch serializes every call on one mutex per device; at 16 threads its throughput
// falls by 4x. Since blocks never cross streams, memstress gives each stream its own pools, lock and
// statistics (StreamPools): threads on their own streams share no lock on the hot path. A lock-free
// stream table finds a stream's pools; a lock-free page map finds the pools that own a freed address.
// What must stay device-wide goes through atomics: the bytes reserved (for the memory fraction) and the
// exact device-wide peaks of allocated and reserved bytes (the figures fragmentation metrics use). The
// slow path (a segment cannot be reserved) takes one allocator-wide mutex and visits the streams one at a
// time, never holding two stream locks, so it cannot deadlock with the fast path.
//
// Note [The hot path]. A cache hit that splits a block and the free that merges it back (the common
// pair) allocate no memory: the free-set node erased by one step is kept in StreamPools::spare and reused by
// the next insert, blocks and nodes come from the stream's NodeResource, statistics of a known sign skip
// the sign test (StatCounter::increase, decrease), and the small steps (stream and owner lookups, the
// thread check, pending events) are defined in this header so that they inline. callgrind, BM_Pair on the
// simulated device, 1 MiB: 1,287 instructions a pair before, 1,049 after; the order of blocks, and so
// every statistic and trace replay, is unchanged.
//
// Note [Parked free]. The commonest pair frees a block and at once asks for the same size again. PyTorch
// merges the block with its free neighbours, and the next allocation finds the merged block (best fit),
// splits the same block off it again and puts the same remainder back: four free-set changes and a block
// made and dropped, to return to where it started. memstress counts a free's statistics at once (every
// figure is current at each step) but parks the block: the merges and the insert wait. The next call on
// the stream either asks for exactly what the merge-and-split would give back, and takes the parked block
// with the statistics of that split (take_parked: same size and pool, nothing pending, no free block of
// the stream fits better, the split would leave exactly the free next block), or finishes the free first
// (unpark) and goes on as before. Parking only happens when the block's previous neighbour is not free
// (else the merged block would start elsewhere) and never with expandable segments. Everything that reads
// or changes a stream's blocks (snapshots, the largest free block, releases, garbage collection, pending
// events, the destructor) unparks first, so the blocks, the statistics and every trace replay are those of
// PyTorch's order (so a caller that reads memory_stats() between every pair never takes the fast path: the
// largest free block unparks). tests/unit/test_caching_parked_free.cpp checks it step by step against an
// allocator that unparks after every call. callgrind, BM_Pair/caching/sim/1048576, the timed loop's
// instructions a pair: 1,262 before, 771 after; its median on a 2-core CPU host: about 70 ns before, 50
// after.
//
// Note [Statistics]. Each stream keeps PyTorch's full DeviceStats; memory_stats() sums them. Currents and
// totals are always exact. Peaks are exact per stream; device-wide, a peak is the maximum of a sum, which
// only a shared counter updated on every call can track, and that one cache line, written by every
// thread, is what stops a multi-threaded allocator from scaling (measured on an H200 host: 6.9 M pairs/s on
// one thread, 9.8 M on sixteen). So: reserved bytes (changed only when segments come and go) always go
// through device-wide atomics, exact. Allocated bytes do too while one thread drives the allocator — the
// case of trace replay and of most workloads, where exactness matters and the atomic is uncontended. Once
// a second thread calls in, the allocator stops touching that atomic and allocated_bytes.all.peak becomes
// the sum of the streams' peaks, an upper bound (byte_peaks_exact = 0). Every other device-wide peak is
// exact while one stream is in use and the sum of the streams' peaks once several are (peaks_exact = 0).
//
// Note [Statistics, incrementally]. memory_stats(), reset_peak_stats() and largest_free_block() cost what
// changed since they last ran, not one visit of every stream: a replay reads the statistics and resets
// the peaks at each of its timeline points, and a trace of 10,000 streams made each point 10,000 visits
// (a doctor of such a trace took minutes). Every change to a stream's pools goes through Changing, which
// queues the stream once on two lists: streams whose figures memory_stats() has not seen, and streams changed
// since the last reset_peak_stats() (which resets those: a stream not changed since the last reset still has
// its peaks at its currents). The allocator keeps device-wide totals of the streams' figures and of their
// largest free blocks: at its first change after a read, under its lock and before it changes, a stream takes
// its figures out of the totals as it joins the first list (one step, under the lists' mutex), and a read
// puts the figures of the streams listed back in (a reader adds them to the totals it copied as it took the
// list, so a stream that leaves them meanwhile is counted once, as it was). The totals never need what a
// stream's figures were: keeping a copy of them for every stream made each stream 944 bytes larger, and a
// doctor of 200,000 streams (two replays side by side) 380 MB larger. The reset list's flag is atomic: a
// reader clears it before it takes the stream's lock, so a change is either seen by that reset or queues the
// stream again.
//
// Note [Releasing, incrementally]. When an allocation does not fit, PyTorch completes every stream's pending
// frees, gives back every cached segment of the device (release_cached_blocks) and retries; looked for by
// visiting every stream and every free block, that made each refusal cost all of them. A trace of N streams
// that allocate once each, on a device full after 40,960 of them, replayed in 0.8 s at N = 40,900, 10 s at
// 41,100 and not within 15 minutes at 200,000; a refusal with many split blocks cached looked at every one.
// Now only what may give something back is looked at:
//   - each stream keeps `releasable`, the free blocks a release gives back (whole segments; free stretches of
//     an expandable segment holding a whole page), kept where a block enters or leaves a free set (neither
//     property changes in between: blocks are split and merged outside the free sets);
//   - the allocator lists, each stream at most once, the streams changed (Changing) since the slow path last
//     left them with nothing to give back (`unreleased`: no releasable block, no parked or pending free), and
//     the streams with pending frees (`pending_listed`).
// A release visits the first list and empties it, in any order (one stream's segments go back independently
// of another's); garbage collection visits it in the streams' order of creation, PyTorch's, which decides
// where it stops, and keeps the streams left holding something; the catch-up on pending frees visits the
// second. A stream on neither list has nothing to give back, so skipping it changes nothing: the segments and
// pages given back, the addresses handed out and every statistic stay PyTorch's, checked against the previous
// code over random calls under every setting of the doctor's grid. One device call fewer: a stream whose
// expandable free blocks hold no whole page no longer synchronizes the device before unmapping nothing. The
// OOM message reads its three figures without building memory_stats()'s table, which cost more than the rest
// of a refusal. The slow path counts what it looks at (slow_path_work()), and
// tests/unit/test_caching_release_work.cpp holds it to what changed. 200,000 streams at capacity: 3 s.

#include <atomic>
#include <deque>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "harness/alloc/alloc_config.hpp"
#include "harness/alloc/allocator.hpp"
#include "harness/alloc/caching/address_map.hpp"
#include "harness/alloc/caching/block.hpp"
#include "harness/alloc/caching/node_resource.hpp"
#include "harness/alloc/caching/page_map.hpp"
#include "harness/alloc/caching/spin_lock.hpp"
#include "harness/alloc/caching/stats.hpp"
#include "harness/alloc/caching/stream_table.hpp"
#include "harness/memory/backend.hpp"

namespace memstress::caching {

// An expandable segment: one virtual range per stream and pool, mapped page by page as it grows.
struct ExpandableSegment {
  std::uintptr_t base = 0;
  std::uint64_t size = 0;  // the whole reserved range
  std::uint64_t page = 0;  // 2 MiB (small pool) or 20 MiB (large pool)
  PoolKind pool = PoolKind::large;
};

// A stream's expandable segments and their unmapped stretches (by PoolKind), made with its first such
// segment: most streams have none, and every stream paid 136 bytes for the empty sets.
struct ExpandableRanges {
  explicit ExpandableRanges(std::pmr::memory_resource* memory)
      : unmapped{std::pmr::set<Block*, ByAddress>(memory), std::pmr::set<Block*, ByAddress>(memory)} {}
  std::array<std::pmr::set<Block*, ByAddress>, 2> unmapped;
  std::vector<ExpandableSegment> segments;
};

// Note [Releasing, incrementally]: the free blocks a release gives back, by pool, then best fit's order.
struct ByPoolThenSize {
  bool operator()(const Block* a, const Block* b) const noexcept {
    return a->pool != b->pool ? a->pool < b->pool : BySize{}(a, b);
  }
};

// One stream's share of the allocator.
struct alignas(64) StreamPools {  // own cache lines: no false sharing between streams
  StreamPools(StreamRef s, std::size_t created);

  StreamRef stream;
  std::size_t order = 0;  // the streams' order of creation (garbage collection visits them in it)
  SpinLock lock;
  NodeResource memory;                                  // set nodes and blocks: no malloc on the hot path
  std::array<std::pmr::set<Block*, BySize>, 2> free;    // by PoolKind
  std::unique_ptr<ExpandableRanges> expandable;         // none until the stream's first expandable segment
  AddressMap<Block> live;                               // allocated blocks by address
  std::vector<std::pair<EventHandle, Block*>> pending;  // events that pending frees wait on
  std::array<std::uint64_t, 2> gc_clock{};              // get_free_block calls, for GC ages
  // Note [Releasing, incrementally]: the free blocks a release would give back (releasable()), and whether
  // the stream is queued for the slow path (`unreleased`, set by Changing) or for its pending frees (under
  // the stream's lock).
  std::pmr::set<Block*, ByPoolThenSize> releasable;
  bool unreleased = false;
  bool pending_listed = false;
  DeviceStats stats;
  // Note [Statistics, incrementally]: whether the device-wide totals hold this stream's figures as they are
  // (else it is queued for memory_stats(); under the stream's lock), its largest free block as they hold
  // it, and whether it is queued for reset_peak_stats().
  bool counted = true;
  std::uint64_t read_largest = 0;
  std::atomic<bool> unreset{false};
  // A node of the free sets kept from the last erase for the next insert, so that the hot path (a split
  // and its merge: two erases and two inserts a pair) allocates no set node. Declared after `memory`,
  // which it came from.
  std::pmr::set<Block*, BySize>::node_type spare;
  // Note [Parked free]: the block freed last, its statistics counted but not yet merged or in a free set;
  // `parked_merges_next`: its next block merges into it when it is.
  Block* parked = nullptr;
  bool parked_merges_next = false;

  Block* new_block();
  void delete_block(Block* block) noexcept;
  ExpandableRanges& ranges() {
    if (expandable == nullptr) {
      expandable = std::make_unique<ExpandableRanges>(&memory);
    }
    return *expandable;
  }
  // Every free-set insert and erase goes through these: they keep `releasable` (and reuse `spare`).
  using FreeSet = std::pmr::set<Block*, BySize>;
  void insert_free(FreeSet& pool, Block* block);
  void erase_free(FreeSet& pool, FreeSet::iterator it);
  void erase_free(FreeSet& pool, Block* block);
  // Whether a release gives `block` (free, in a free set) back, in whole or in part: a whole segment, or a
  // free stretch of an expandable segment holding at least one whole page (release_blocks unmaps those
  // pages). Neither can change while the block is in a free set: blocks are split and merged out of it.
  [[nodiscard]] bool releasable_block(const Block& block) const noexcept;
  // Whether the slow path has nothing to do here: nothing to release, no parked or pending free.
  [[nodiscard]] bool nothing_to_release() const noexcept {
    return releasable.empty() && pending.empty() && parked == nullptr;
  }
};

class CachingAllocator final : public Allocator {
 public:
  // Requests this large are refused at once, as PyTorch does (rounding would overflow).
  static constexpr std::uint64_t kMaxRequest = std::uint64_t{1} << 60;

  CachingAllocator(DeviceBackend& backend, AllocConfig config);
  ~CachingAllocator() override;
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;
  CachingAllocator(CachingAllocator&&) = delete;
  CachingAllocator& operator=(CachingAllocator&&) = delete;

  [[nodiscard]] std::string_view name() const noexcept override;
  [[nodiscard]] DeviceBackend& backend() const noexcept override { return backend_; }
  [[nodiscard]] MemoryStats memory_stats() const override;
  void reset_peak_stats() override;
  [[nodiscard]] const AllocConfig& config() const noexcept { return config_; }

  // PyTorch's memory snapshot: every segment with its blocks and their states.
  [[nodiscard]] nlohmann::json snapshot() const override;
  // The largest free cached block (any stream), for fragmentation figures.
  [[nodiscard]] std::uint64_t largest_free_block() const;

  // What the slow path (release and retry, empty_cache, garbage collection) has looked at since the
  // allocator was made: the streams it visited (a listing of every stream counts them all) and the cached
  // blocks it examined. Note [Releasing, incrementally]: both grow with what changed, not with every stream
  // and every block at each refusal.
  struct SlowPathWork {
    std::uint64_t streams = 0;
    std::uint64_t blocks = 0;
  };
  [[nodiscard]] SlowPathWork slow_path_work() const noexcept {
    return {visited_streams_.load(std::memory_order_relaxed),
            examined_blocks_.load(std::memory_order_relaxed)};
  }

 private:
  void* do_allocate(std::size_t bytes, StreamRef stream) override;
  std::optional<void*> do_try_allocate(std::size_t bytes, StreamRef stream, std::string* refusal) override;
  void do_deallocate(void* ptr) override;
  void do_empty_cache() override;
  void do_record_stream(void* ptr, StreamRef stream) override;

  struct Request {
    std::uint64_t bytes = 0;       // as asked
    std::uint64_t size = 0;        // rounded
    std::uint64_t alloc_size = 0;  // a new segment's size
    PoolKind pool = PoolKind::large;
  };

  // The hot path's small steps are defined here so that they inline into allocate and deallocate.
  StreamPools& pools_for(StreamRef stream) {
    if (StreamPools* sp = streams_.find(stream.id)) {
      return *sp;
    }
    return add_pools(stream);
  }
  StreamPools& add_pools(StreamRef stream);
  StreamPools* owner_of(const void* ptr) const noexcept {
    return owners_.find(reinterpret_cast<std::uintptr_t>(ptr));  // NOLINT(performance-no-int-to-ptr)
  }
  std::vector<StreamPools*> all_pools() const;

  // Note [Statistics, incrementally]: a stream's lock, taken to change its pools.
  class Changing {
   public:
    Changing(const CachingAllocator& allocator, StreamPools& sp) : lock_(sp.lock) { allocator.changed(sp); }

   private:
    std::scoped_lock<SpinLock> lock_;
  };
  void changed(StreamPools& sp) const;
  // The device-wide totals and largest free block, the streams changed since the last read counted again
  // (under stats_mutex_).
  struct Totals {
    DeviceStats stats;
    std::uint64_t largest = 0;
  };
  Totals read_totals() const;

  // Under the stream's lock.
  Block* get_free_block(StreamPools& sp, const Request& r);
  Block* alloc_block(StreamPools& sp, const Request& r, bool retry);
  Block* try_allocate_expandable(StreamPools& sp, const Request& r);
  bool should_split(const Block& block, std::uint64_t size) const noexcept {
    return should_split(block.pool, block.size, size);
  }
  bool should_split(PoolKind pool, std::uint64_t block_size, std::uint64_t size) const noexcept {
    const std::uint64_t remaining = block_size - size;
    if (pool == PoolKind::small || config_.expandable_segments) {
      return remaining >= kMinBlockSize;
    }
    return size < config_.max_split_size && remaining > kSmallSize;
  }
  void* finish_allocation(StreamPools& sp, Block* block, const Request& r);
  // The statistics and the hand-over of a block taken from the free set (after any split; `rest`: the
  // remainder split off it, or null; `was_split`: the block taken was part of a split segment).
  void* hand_out(StreamPools& sp, Block* block, const Request& r, bool was_split, const Block* rest);

  // Freeing, in two halves (Note [Parked free]): the statistics, counted at once, and the merges with free
  // neighbours and the insert into the free set, which a parked block waits for.
  struct FreePlan {
    bool merge_prev = false;
    bool merge_next = false;
  };
  static bool mergeable(const Block& dst, const Block* src) noexcept {
    return src != nullptr && src->is_free() && src->mapped == dst.mapped;
  }
  static FreePlan plan_free(const Block& b) noexcept { return {mergeable(b, b.prev), mergeable(b, b.next)}; }
  void free_block(StreamPools& sp, Block* block);
  static void count_free(StreamPools& sp, const Block& block, FreePlan plan);
  static void merge_free(StreamPools& sp, Block* block, FreePlan plan);
  static std::uint64_t try_merge(StreamPools& sp, Block* dst, Block* src);
  // Finishes the parked free, if any: every step but the pair's fast path does this first.
  static void unpark(StreamPools& sp) {
    if (sp.parked != nullptr) {
      Block* b = sp.parked;
      sp.parked = nullptr;
      merge_free(sp, b, {false, sp.parked_merges_next});
    }
  }
  // Hands out the parked block if the request would get exactly it back, with its free next block as the
  // remainder: the result of merging and splitting again, without either. Null otherwise (nothing changed).
  void* take_parked(StreamPools& sp, const Request& r);
  void process_events(StreamPools& sp) {
    if (!sp.pending.empty()) {
      process_pending(sp);
    }
  }
  void process_pending(StreamPools& sp);
  void synchronize_and_free_events(StreamPools& sp);
  void release_segment(StreamPools& sp, Block* block);
  void release_blocks(StreamPools& sp, PoolKind pool);
  bool release_available_cached_blocks(StreamPools& sp, const Request& r);
  bool garbage_collect();
  Block* map_block(StreamPools& sp, Block* block, std::uint64_t bytes);
  void unmap_block(StreamPools& sp, Block* block);
  Block* new_expandable_segment(StreamPools& sp, PoolKind pool);

  // The slow path: free what can be freed, device-wide, and retry. Returns the memory, or null when it is
  // refused (refuse()). tried_alloc: the fast path already searched and tried to reserve.
  void* finish_allocation_slow(StreamPools& sp, const Request& r, bool tried_alloc, std::string* refusal);
  void release_cached_blocks();
  // Completes the pending frees that have completed on every stream listed with some but `sp`.
  void process_listed_pending(const StreamPools& sp);
  // Note [Releasing, incrementally]: takes the streams queued for the slow path; puts streams back.
  std::vector<StreamPools*> take_unreleased();
  void requeue_unreleased(std::vector<StreamPools*>::const_iterator from,
                          std::vector<StreamPools*>::const_iterator to);
  // Counts a refusal (num_ooms) and, where asked, explains it as PyTorch's OOM message does and more.
  void refuse(const Request& r, std::string* refusal);

  // The bytes reserved on the device, all streams, against the memory fraction's cap: claimed with a
  // compare-and-swap before the device is asked, so racing threads cannot pass the cap together.
  bool claim_reserved(std::uint64_t bytes) noexcept;
  void unclaim_reserved(std::uint64_t bytes) noexcept;
  // Device-wide byte counters with exact peaks (Note [Statistics]).
  void note_thread() noexcept {
    if (concurrent_.load(std::memory_order_relaxed)) {
      return;
    }
    const std::thread::id self = std::this_thread::get_id();
    std::thread::id first = first_thread_.load(std::memory_order_relaxed);
    if (first == std::thread::id{} &&
        first_thread_.compare_exchange_strong(first, self, std::memory_order_relaxed)) {
      return;
    }
    if (first != self) {
      concurrent_.store(true, std::memory_order_relaxed);
    }
  }
  void add_allocated(std::int64_t delta) noexcept {
    if (concurrent_.load(std::memory_order_relaxed)) {
      return;  // device-wide peaks now come from the streams' peaks
    }
    const std::int64_t now = allocated_current_.fetch_add(delta, std::memory_order_relaxed) + delta;
    if (delta > 0) {
      raise_peak(allocated_peak_, now);
    }
  }
  static void raise_peak(std::atomic<std::int64_t>& peak, std::int64_t value) noexcept {
    std::int64_t seen = peak.load(std::memory_order_relaxed);
    while (value > seen && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
    }
  }
  void add_reserved(std::int64_t delta) noexcept;

  DeviceBackend& backend_;
  const AllocConfig config_;
  const std::uint64_t allowed_max_;  // the memory fraction's cap on reserved bytes (capacity without one)

  StreamTable<StreamPools> streams_;
  mutable std::mutex pools_mutex_;
  std::deque<std::unique_ptr<StreamPools>> pools_;  // stable addresses; streams are never forgotten
  PageMap<StreamPools> owners_;
  std::mutex slow_mutex_;  // one thread at a time frees caches and retries
  // Note [Statistics, incrementally]. queue_mutex_ guards the lists and the totals: a stream leaves the
  // totals and joins unread_ in one step.
  mutable std::mutex queue_mutex_;
  mutable std::vector<StreamPools*> unread_;
  mutable std::vector<StreamPools*> unreset_;
  mutable DeviceStats totals_;                    // the sum of the counted streams' figures
  mutable std::multiset<std::uint64_t> largest_;  // the counted streams' read_largest above 0
  // Note [Releasing, incrementally] (under queue_mutex_).
  mutable std::vector<StreamPools*> unreleased_;
  std::vector<StreamPools*> with_pending_;
  mutable std::atomic<std::uint64_t> visited_streams_{0};
  std::atomic<std::uint64_t> examined_blocks_{0};
  mutable std::mutex stats_mutex_;  // one reader at a time

  std::atomic<std::uint64_t> total_reserved_{0};  // segments plus mapped pages, all streams
  alignas(64) std::atomic<std::int64_t> allocated_current_{0};
  std::atomic<std::int64_t> allocated_peak_{0};
  alignas(64) std::atomic<std::int64_t> reserved_current_{0};
  std::atomic<std::int64_t> reserved_peak_{0};
  std::atomic<std::int64_t> num_alloc_retries_{0};
  std::atomic<std::int64_t> num_ooms_{0};
  std::atomic<std::int64_t> num_sync_all_streams_{0};
  std::atomic<std::thread::id> first_thread_{};
  std::atomic<bool> concurrent_{false};  // a second thread has called in: sticky
};

}  // namespace memstress::caching
