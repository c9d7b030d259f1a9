#include "harness/alloc/pinned_host_allocator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <exception>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/core/units.hpp"
#include "harness/stats/counter.hpp"

namespace memstress {
namespace {

constexpr std::size_t kMaxBlockBytes = std::size_t{1} << (std::numeric_limits<std::size_t>::digits - 1);
constexpr std::size_t kClasses = std::numeric_limits<std::size_t>::digits;  // indexed by log2(size)

enum class State : std::uint8_t {
  allocated,  // the user has it
  freeing,    // inside deallocate, while its completions are recorded (outside the lock)
  pending,    // freed, waiting on completions
  cached,     // freed, reusable
};

struct Block {
  void* ptr = nullptr;
  std::size_t size = 0;       // the size class: what the source gave
  std::size_t requested = 0;  // what the user asked for (while allocated)
  State state = State::allocated;
  std::vector<StreamRef> streams;       // recorded while allocated
  std::vector<Completion> completions;  // while pending: those not yet seen done
};

std::size_t class_index(std::size_t size) noexcept {
  return static_cast<std::size_t>(std::countr_zero(size));
}

std::int64_t as_stat(std::size_t bytes) noexcept {
  return static_cast<std::int64_t>(bytes);
}

std::string as_bytes(std::int64_t bytes) {
  return format_bytes(static_cast<std::uint64_t>(bytes));
}

// Drops the completions seen done; true when none is left.
bool ready(Block& block) {
  auto& completions = block.completions;
  while (!completions.empty() && completions.back().done()) {
    completions.pop_back();
  }
  return completions.empty();
}

}  // namespace

struct PinnedHostAllocator::Impl {
  explicit Impl(std::unique_ptr<HostMemorySource> from) : source(std::move(from)) {
    if (source == nullptr) {
      throw std::invalid_argument("PinnedHostAllocator needs a host memory source");
    }
  }
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  Impl(Impl&&) = delete;
  Impl& operator=(Impl&&) = delete;

  // All below under `mutex`.
  Block* take_cached(std::size_t size);
  void hand_out(Block& block, std::size_t requested);
  void take_back(Block& block, std::vector<Completion> completions);
  std::vector<std::pair<void*, std::size_t>> collect_releasable();
  Block& find(void* ptr, std::string_view what);
  [[nodiscard]] std::string describe_oom(std::size_t bytes, std::size_t size) const;

  void* allocate(std::size_t bytes);
  void deallocate(void* ptr);
  void empty_cache();

  std::unique_ptr<HostMemorySource> source;  // first: outlives the completions held by blocks
  mutable std::mutex mutex;
  std::unordered_map<void*, Block> blocks;           // every block from the source (stable addresses)
  std::array<std::vector<Block*>, kClasses> cached;  // per class, reused last-in first-out
  std::array<std::deque<Block*>, kClasses> pending;  // per class, in the order freed

  StatCounter allocated_bytes;
  StatCounter reserved_bytes;
  StatCounter requested_bytes;
  StatCounter allocation;
  StatCounter segment;
  std::int64_t num_host_alloc = 0;
  std::int64_t num_host_free = 0;
  std::int64_t num_cache_hits = 0;
  std::int64_t num_cache_misses = 0;
  std::int64_t num_alloc_retries = 0;
  std::int64_t num_ooms = 0;
  std::int64_t pending_free_bytes = 0;
  std::int64_t pending_free_blocks = 0;
};

PinnedHostAllocator::Impl::~Impl() {
  std::size_t leaked_blocks = 0;
  std::size_t leaked_bytes = 0;
  for (auto& [ptr, block] : blocks) {
    if (block.state == State::allocated || block.state == State::freeing) {
      ++leaked_blocks;
      leaked_bytes += block.size;
    }
  }
  if (leaked_blocks != 0) {
    fmt::print(stderr,
               "memstress: pinned host allocator ({} source) destroyed with {} blocks ({}) still allocated; "
               "freeing them\n",
               source->name(), leaked_blocks, format_bytes(leaked_bytes));
  }
  for (auto& [ptr, block] : blocks) {
    try {
      for (const StreamRef stream : block.streams) {  // a leaked block may still be in use
        source->record(stream).wait();
      }
      for (const Completion& completion : block.completions) {
        completion.wait();
      }
    } catch (const std::exception& e) {
      fmt::print(stderr, "memstress: pinned host allocator: waiting for a block's streams failed: {}\n",
                 e.what());
    }
    block.completions.clear();
    source->deallocate(ptr, block.size);
  }
}

Block* PinnedHostAllocator::Impl::take_cached(std::size_t size) {
  const std::size_t index = class_index(size);
  if (auto& free = cached[index]; !free.empty()) {
    Block* block = free.back();
    free.pop_back();
    return block;
  }
  if (auto& waiting = pending[index]; !waiting.empty() && ready(*waiting.front())) {
    Block* block = waiting.front();
    waiting.pop_front();
    pending_free_bytes -= as_stat(block->size);
    --pending_free_blocks;
    return block;
  }
  return nullptr;
}

void PinnedHostAllocator::Impl::hand_out(Block& block, std::size_t requested) {
  block.state = State::allocated;
  block.requested = requested;
  allocated_bytes.add(as_stat(block.size));
  requested_bytes.add(as_stat(requested));
  allocation.add(1);
}

void PinnedHostAllocator::Impl::take_back(Block& block, std::vector<Completion> completions) {
  const std::size_t index = class_index(block.size);
  if (completions.empty()) {
    cached[index].push_back(&block);
    block.state = State::cached;
  } else {
    pending[index].push_back(&block);
    block.completions = std::move(completions);
    block.state = State::pending;
    pending_free_bytes += as_stat(block.size);
    ++pending_free_blocks;
  }
  block.streams.clear();
  allocated_bytes.sub(as_stat(block.size));
  requested_bytes.sub(as_stat(std::exchange(block.requested, 0)));
  allocation.sub(1);
}

std::vector<std::pair<void*, std::size_t>> PinnedHostAllocator::Impl::collect_releasable() {
  std::vector<std::pair<void*, std::size_t>> out;
  const auto release = [&](Block* block) {
    out.emplace_back(block->ptr, block->size);
    reserved_bytes.sub(as_stat(block->size));
    segment.sub(1);
    ++num_host_free;
  };
  for (std::size_t index = 0; index < kClasses; ++index) {
    for (Block* block : cached[index]) {
      release(block);
    }
    cached[index].clear();
    auto& waiting = pending[index];
    for (auto it = waiting.begin(); it != waiting.end();) {
      if (ready(**it)) {
        pending_free_bytes -= as_stat((*it)->size);
        --pending_free_blocks;
        release(*it);
        it = waiting.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& [ptr, size] : out) {
    blocks.erase(ptr);
  }
  return out;
}

Block& PinnedHostAllocator::Impl::find(void* ptr, std::string_view what) {
  const auto it = blocks.find(ptr);
  if (it == blocks.end() || it->second.state != State::allocated) {
    throw InputError(fmt::format("pinned host allocator: {} of {}, which is not an allocated block{}", what,
                                 ptr, it == blocks.end() ? "" : " (it was freed already)"));
  }
  return it->second;
}

std::string PinnedHostAllocator::Impl::describe_oom(std::size_t bytes, std::size_t size) const {
  const std::int64_t free_bytes = reserved_bytes.current - allocated_bytes.current - pending_free_bytes;
  return fmt::format(
      "pinned host allocator: out of memory allocating {} ({} bytes, size class {}) from the {} source, "
      "after "
      "releasing its cache and retrying; it holds {} reserved in {} blocks: {} allocated in {} blocks, {} "
      "freed but waiting on streams in {} blocks (synchronize them and call empty_cache to release those), "
      "{} cached; {} host allocations, {} frees, {} cache hits, {} misses, {} OOMs",
      format_bytes(bytes), bytes, format_bytes(size), source->name(), as_bytes(reserved_bytes.current),
      segment.current, as_bytes(allocated_bytes.current), allocation.current, as_bytes(pending_free_bytes),
      pending_free_blocks, as_bytes(free_bytes), num_host_alloc, num_host_free, num_cache_hits,
      num_cache_misses, num_ooms);
}

void* PinnedHostAllocator::Impl::allocate(std::size_t bytes) {
  if (bytes == 0) {
    return nullptr;
  }
  const std::size_t size = size_class(bytes);
  {
    const std::scoped_lock lock(mutex);
    if (Block* block = take_cached(size)) {
      hand_out(*block, bytes);
      ++num_cache_hits;
      return block->ptr;
    }
  }
  void* ptr = source->allocate(size);  // outside the lock: slow, and serializes in the driver
  if (ptr == nullptr) {
    {
      const std::scoped_lock lock(mutex);
      ++num_alloc_retries;
    }
    empty_cache();
    ptr = source->allocate(size);
    if (ptr == nullptr) {
      const std::scoped_lock lock(mutex);
      ++num_ooms;
      throw OutOfMemoryError(describe_oom(bytes, size));
    }
  }
  const std::scoped_lock lock(mutex);
  try {
    Block& block = blocks.try_emplace(ptr).first->second;
    block.ptr = ptr;
    block.size = size;
    hand_out(block, bytes);
  } catch (...) {
    source->deallocate(ptr, size);
    throw;
  }
  reserved_bytes.add(as_stat(size));
  segment.add(1);
  ++num_host_alloc;
  ++num_cache_misses;
  return ptr;
}

void PinnedHostAllocator::Impl::deallocate(void* ptr) {
  Block* block = nullptr;
  std::vector<StreamRef> streams;
  {
    const std::scoped_lock lock(mutex);
    block = &find(ptr, "deallocate");
    if (block->streams.empty()) {
      take_back(*block, {});
      return;
    }
    block->state = State::freeing;  // a second deallocate now fails; nothing else touches it
    streams = block->streams;
  }
  // Recorded outside the lock: an event record is a driver call.
  std::vector<Completion> completions;
  try {
    completions.reserve(streams.size());
    for (const StreamRef stream : streams) {
      if (Completion completion = source->record(stream); !completion.empty()) {
        completions.push_back(std::move(completion));
      }
    }
  } catch (...) {
    const std::scoped_lock lock(mutex);
    block->state = State::allocated;  // as if deallocate had not been called
    throw;
  }
  const std::scoped_lock lock(mutex);
  take_back(*block, std::move(completions));
}

void PinnedHostAllocator::Impl::empty_cache() {
  std::vector<std::pair<void*, std::size_t>> released;
  {
    const std::scoped_lock lock(mutex);
    released = collect_releasable();
  }
  for (const auto& [ptr, size] : released) {  // outside the lock: cudaFreeHost is slow
    source->deallocate(ptr, size);
  }
}

PinnedHostAllocator::PinnedHostAllocator(std::unique_ptr<HostMemorySource> source)
    : impl_(std::make_unique<Impl>(std::move(source))) {}

PinnedHostAllocator::~PinnedHostAllocator() = default;
PinnedHostAllocator::PinnedHostAllocator(PinnedHostAllocator&&) noexcept = default;
PinnedHostAllocator& PinnedHostAllocator::operator=(PinnedHostAllocator&&) noexcept = default;

PinnedHostAllocator::Impl& PinnedHostAllocator::impl() const {
  if (impl_ == nullptr) {
    throw std::logic_error("use of a moved-from PinnedHostAllocator");
  }
  return *impl_;
}

void* PinnedHostAllocator::allocate(std::size_t bytes) {
  return impl().allocate(bytes);
}

void PinnedHostAllocator::deallocate(void* ptr) {
  if (ptr != nullptr) {
    impl().deallocate(ptr);
  }
}

void PinnedHostAllocator::record_stream(void* ptr, StreamRef stream) {
  if (ptr == nullptr) {
    return;
  }
  Impl& state = impl();
  const std::scoped_lock lock(state.mutex);
  auto& streams = state.find(ptr, "record_stream").streams;
  if (std::find(streams.begin(), streams.end(), stream) == streams.end()) {
    streams.push_back(stream);
  }
}

void PinnedHostAllocator::empty_cache() {
  impl().empty_cache();
}

MemoryStats PinnedHostAllocator::memory_stats() const {
  const Impl& state = impl();
  const std::scoped_lock lock(state.mutex);
  MemoryStats stats;
  state.allocated_bytes.export_to(stats, "allocated_bytes.all");
  state.reserved_bytes.export_to(stats, "reserved_bytes.all");
  state.requested_bytes.export_to(stats, "requested_bytes.all");
  state.allocation.export_to(stats, "allocation.all");
  state.segment.export_to(stats, "segment.all");
  stats["num_host_alloc"] = state.num_host_alloc;
  stats["num_host_free"] = state.num_host_free;
  stats["num_cache_hits"] = state.num_cache_hits;
  stats["num_cache_misses"] = state.num_cache_misses;
  stats["num_alloc_retries"] = state.num_alloc_retries;
  stats["num_ooms"] = state.num_ooms;
  stats["pending_free_bytes"] = state.pending_free_bytes;
  stats["pending_free_blocks"] = state.pending_free_blocks;
  return stats;
}

void PinnedHostAllocator::reset_peak_stats() {
  Impl& state = impl();
  const std::scoped_lock lock(state.mutex);
  state.allocated_bytes.reset_peak();
  state.reserved_bytes.reset_peak();
  state.requested_bytes.reset_peak();
  state.allocation.reset_peak();
  state.segment.reset_peak();
}

bool PinnedHostAllocator::pinned() const {
  return impl().source->pinned();
}

std::string_view PinnedHostAllocator::source_name() const {
  return impl().source->name();
}

std::size_t PinnedHostAllocator::size_class(std::size_t bytes) {
  if (bytes > kMaxBlockBytes) {
    throw OutOfMemoryError(
        fmt::format("pinned host allocator: {} bytes is more than any block can hold", bytes));
  }
  return std::max(kMinBlockBytes, std::bit_ceil(bytes));
}

}  // namespace memstress
