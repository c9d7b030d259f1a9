#include "suites/support/live_blocks.hpp"

#include <fmt/format.h>

#include <iterator>
#include <stdexcept>
#include <utility>

#include "harness/core/cuda_check.hpp"
#include "harness/memory/backend.hpp"
#include "harness/run/context.hpp"

namespace memstress::suites {
namespace {

constexpr std::uintptr_t kAlignment = 256;  // what cudaMalloc guarantees and every allocator must keep
constexpr kernels::Pattern kPattern = kernels::Pattern::random;
// The legacy default stream, where the blocks are allocated.
cudaStream_t stream() noexcept {
  return nullptr;
}

std::uintptr_t address(const void* p) noexcept {
  return reinterpret_cast<std::uintptr_t>(p);
}

}  // namespace

LiveBlocks::LiveBlocks(Allocator& allocator, bool data_checks) : allocator_(allocator) {
  if (data_checks && allocator.backend().has_memory()) {
    checker_.emplace();
  }
}

LiveBlocks::~LiveBlocks() {
  release_all();
}

LiveBlocks::Id LiveBlocks::allocate(std::size_t bytes) {
  if (bytes == 0) {
    throw std::logic_error("LiveBlocks::allocate: 0 bytes");
  }
  void* ptr = allocator_.allocate(bytes);
  const std::uint64_t seed = kernels::splitmix64(seed_ + next_id_);
  const Id id = insert(ptr, bytes, seed);
  if (checker_) {
    kernels::fill(ptr, bytes, kPattern, seed, stream());
  }
  return id;
}

LiveBlocks::Id LiveBlocks::grow(Id id, std::size_t bytes) {
  const Block old = at(id);
  if (bytes < old.bytes) {
    throw std::logic_error("LiveBlocks::grow: the new size is smaller");
  }
  void* ptr = allocator_.allocate(bytes);
  const Id grown = insert(ptr, bytes, old.seed);
  if (checker_) {
    // Copy whole 16-byte units (fill needs 16-byte alignment), then continue the pattern from there.
    const std::size_t copied = old.bytes / 16 * 16;
    MEMSTRESS_CUDA_TRY(cudaMemcpyAsync(ptr, old.ptr, copied, cudaMemcpyDeviceToDevice, stream()));
    kernels::fill(static_cast<char*>(ptr) + copied, bytes - copied, kPattern, old.seed + copied / 8,
                  stream());
  }
  free(id);
  return grown;
}

void LiveBlocks::free(Id id) {
  const Block block = at(id);
  check_data(id, block);
  erase(id, block);
  allocator_.deallocate(block.ptr);
}

void LiveBlocks::check_all() {
  for (const auto& [id, block] : blocks_) {
    check_data(id, block);
  }
}

void LiveBlocks::free_all() {
  while (!blocks_.empty()) {
    free(blocks_.begin()->first);
  }
}

void LiveBlocks::release_all() noexcept {
  for (const auto& [id, block] : blocks_) {
    allocator_.deallocate(block.ptr);
  }
  blocks_.clear();
  ranges_.clear();
  live_bytes_ = 0;
}

void LiveBlocks::report(CaseContext& ctx) {
  ctx.verified(std::exchange(checked_, 0), std::exchange(errors_, 0));
  if (!first_error_.empty() && !noted_) {
    ctx.note(first_error_);
    noted_ = true;
  }
}

LiveBlocks::Block& LiveBlocks::at(Id id) {
  const auto it = blocks_.find(id);
  if (it == blocks_.end()) {
    throw std::logic_error(fmt::format("LiveBlocks: block #{} is not live", id));
  }
  return it->second;
}

LiveBlocks::Id LiveBlocks::insert(void* ptr, std::size_t bytes, std::uint64_t seed) {
  const Id id = next_id_++;
  const Block block{ptr, bytes, seed};
  blocks_.emplace(id, block);
  live_bytes_ += bytes;
  check_placement(id, block);
  return id;
}

void LiveBlocks::erase(Id id, const Block& block) {
  const auto range = ranges_.find(address(block.ptr));
  if (range != ranges_.end() && range->second.id == id) {
    ranges_.erase(range);
  }
  live_bytes_ -= block.bytes;
  blocks_.erase(id);
}

void LiveBlocks::check_placement(Id id, const Block& block) {
  const std::uintptr_t start = address(block.ptr);
  const std::uintptr_t end = start + block.bytes;
  ++checked_;
  if (start % kAlignment != 0) {
    error(1, fmt::format("block #{} of {} bytes at {:#x} is not {}-byte aligned", id, block.bytes, start,
                         kAlignment));
    return;
  }
  const auto next = ranges_.lower_bound(start);
  const bool overlaps_next = next != ranges_.end() && next->first < end;
  const bool overlaps_prev = next != ranges_.begin() && std::prev(next)->second.end > start;
  if (overlaps_next || overlaps_prev) {
    const Id other = overlaps_next ? next->second.id : std::prev(next)->second.id;
    error(1, fmt::format("block #{} of {} bytes at {:#x} overlaps live block #{}", id, block.bytes, start,
                         other));
    return;
  }
  ranges_.emplace(start, Range{end, id});
}

void LiveBlocks::check_data(Id id, const Block& block) {
  if (!checker_) {
    return;
  }
  const kernels::CheckResult r = checker_->check(block.ptr, block.bytes, kPattern, block.seed, stream());
  checked_ += r.checked_words;
  if (!r.ok()) {
    error(r.bad_words, fmt::format("block #{} of {} bytes: {} bad words, the first at byte offset {}", id,
                                   block.bytes, r.bad_words, r.first_bad_word * 8));
  }
}

void LiveBlocks::error(std::uint64_t count, std::string text) {
  errors_ += count;
  if (first_error_.empty()) {
    first_error_ = std::move(text);
  }
}

}  // namespace memstress::suites
