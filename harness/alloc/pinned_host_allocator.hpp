#pragma once

// Note [Pinned host cache]
// ========================
// Transfers and dataloaders stage data in page-locked host memory, and they allocate and free the same
// few sizes over and over. cudaHostAlloc and cudaFreeHost are slow (pages are locked and mapped into every
// context; freeing may synchronize the device) and serialize in the driver, so this cache keeps freed
// blocks and hands them out again, in the spirit of PyTorch's CachingHostAllocator (our own code).
//
// Size classes. A request is rounded up to the next power of two, at least kMinBlockBytes (4 KiB, the
// page size: memory is locked page by page anyway), and is served by a cached block of exactly that class
// or by a new block of that size from the source. Blocks are never split or merged: a pinned block must go
// back to cudaFreeHost whole, and a small live piece of a split block would keep a large pinned region
// from being released. Exact classes make reuse a constant-time lookup over at most 52 free lists, at the
// price of at most 2x internal waste (allocated_bytes counts the class, requested_bytes the request).
//
// Why events. A block given to cudaMemcpyAsync is read (H2D) or written (D2H) by the device after the
// call returns, and the caller commonly frees it at once. Handed out again at once, its next user would
// overwrite data the device has not copied yet. So callers name every stream that uses a block with
// record_stream (a host block has no stream of its own, unlike a device block, so there is no stream the
// cache may assume). deallocate records one completion (a pooled CUDA event) per recorded stream, and the
// block is reused only once all of them are done. The cache never waits for them: an allocate queries,
// without blocking, the oldest pending block of its class (first freed, first reused; it stops there, as
// PyTorch does, so an allocate costs at most one block's queries), and when that one is not done it takes a
// new block from the source instead. With the `plain` source there are no streams: record_stream changes
// nothing and a freed block is reusable at once.
//
// Pending. A block is "pending" from its deallocate until the cache sees all its completions done: at an
// allocate of its class (oldest first) or at empty_cache (all of them). It is lazy, so pending_free_bytes
// may include blocks whose streams have already passed them. Pending bytes are reserved, not allocated:
//   reserved_bytes == allocated_bytes + pending_free_bytes + cached (free, reusable) bytes.
//
// Out of memory. When the source has no memory (nullptr), the cache releases its free blocks to the source
// (empty_cache) and retries once; then it throws OutOfMemoryError with the request and its counters.
// Pending blocks cannot be released early: synchronize their streams and call empty_cache for that.
//
// Locking. One mutex guards the bookkeeping. Calls into the source that reach the driver (cudaHostAlloc,
// cudaFreeHost, event records) happen outside it; event queries (non-blocking) happen under it.
//
// Not an Allocator: that seam hands out one device's memory for a stream; host blocks belong to neither,
// so this is a peer with the same verbs (allocate, deallocate, empty_cache, memory_stats).

#include <cstddef>
#include <memory>
#include <string_view>

#include "harness/alloc/allocator.hpp"
#include "harness/alloc/host_memory_source.hpp"
#include "harness/memory/stream_ref.hpp"

namespace memstress {

class PinnedHostAllocator {
 public:
  static constexpr std::size_t kMinBlockBytes = kHostPageBytes;

  explicit PinnedHostAllocator(std::unique_ptr<HostMemorySource> source);
  // Frees every block back to the source; blocks still allocated are reported (one line on stderr) and
  // freed too, after waiting for the streams recorded on them.
  ~PinnedHostAllocator();
  // A moved-from allocator may only be destroyed or assigned to; anything else throws std::logic_error.
  PinnedHostAllocator(PinnedHostAllocator&&) noexcept;
  PinnedHostAllocator& operator=(PinnedHostAllocator&&) noexcept;
  PinnedHostAllocator(const PinnedHostAllocator&) = delete;
  PinnedHostAllocator& operator=(const PinnedHostAllocator&) = delete;

  // A block of size_class(bytes) bytes, aligned to kHostPageBytes; nullptr for 0 bytes. Throws
  // OutOfMemoryError when the source has no memory even after the cache is emptied.
  [[nodiscard]] void* allocate(std::size_t bytes);
  // Gives back a block from allocate (null is ignored). Throws InputError for anything else, a block
  // freed twice included.
  void deallocate(void* ptr);
  // Notes that work enqueued on `stream` so far (and until deallocate) uses the block at `ptr`, a pointer
  // from allocate (null is ignored): the block is not handed out again before that stream has passed the
  // deallocate. PyTorch's Tensor.record_stream, as in Allocator::record_stream.
  void record_stream(void* ptr, StreamRef stream);
  // Releases every cached block whose streams are done to the source.
  void empty_cache();

  // PyTorch's names: allocated_bytes, reserved_bytes, requested_bytes, allocation, segment (each
  // .all.{current,peak,allocated,freed}); num_host_alloc, num_host_free, num_cache_hits,
  // num_cache_misses, num_alloc_retries, num_ooms, pending_free_bytes, pending_free_blocks.
  [[nodiscard]] MemoryStats memory_stats() const;
  void reset_peak_stats();

  // Whether the source's memory is page-locked (false for the `plain` source), and its name.
  [[nodiscard]] bool pinned() const;
  [[nodiscard]] std::string_view source_name() const;

  // The bytes a request is served with: the next power of two, at least kMinBlockBytes. Throws
  // OutOfMemoryError where that is not representable.
  [[nodiscard]] static std::size_t size_class(std::size_t bytes);

 private:
  struct Impl;
  [[nodiscard]] Impl& impl() const;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memstress
