#include "harness/alloc/live_blocks.hpp"

#include <fmt/format.h>

#include "harness/core/error.hpp"

namespace memstress {

void LiveBlocks::add(void* ptr, std::size_t bytes, StreamRef stream, std::string_view who) {
  const std::scoped_lock lock(mutex_);
  if (!blocks_.emplace(ptr, Block{bytes, StreamUses(stream)}).second) {
    throw Error(ExitCode::check_failed,
                fmt::format("{}: handed out {} again while it is still allocated", who, ptr));
  }
  held_.add(static_cast<std::int64_t>(bytes));
}

LiveBlocks::Block LiveBlocks::take(void* ptr, std::string_view who) {
  const std::scoped_lock lock(mutex_);
  const auto it = blocks_.find(ptr);
  if (it == blocks_.end()) {
    throw InputError(fmt::format("{}: deallocate of {} which it did not allocate", who, ptr));
  }
  Block block = std::move(it->second);
  blocks_.erase(it);
  held_.sub(static_cast<std::int64_t>(block.bytes));
  return block;
}

void LiveBlocks::restore(void* ptr, Block block) {
  const std::scoped_lock lock(mutex_);
  const auto bytes = static_cast<std::int64_t>(block.bytes);
  if (blocks_.emplace(ptr, std::move(block)).second) {  // take() undone: not freed, and never counted so
    held_.current += bytes;
    held_.freed -= bytes;
  }
}

void LiveBlocks::record(void* ptr, StreamRef stream, std::string_view who) {
  const std::scoped_lock lock(mutex_);
  const auto it = blocks_.find(ptr);
  if (it == blocks_.end()) {
    throw InputError(fmt::format("{}: record_stream of {}, which is not allocated", who, ptr));
  }
  it->second.streams.add(stream);
}

std::vector<std::pair<void*, LiveBlocks::Block>> LiveBlocks::drain() {
  const std::scoped_lock lock(mutex_);
  std::vector<std::pair<void*, Block>> out(std::make_move_iterator(blocks_.begin()),
                                           std::make_move_iterator(blocks_.end()));
  blocks_.clear();
  held_.sub(held_.current);
  return out;
}

StatCounter LiveBlocks::held() const {
  const std::scoped_lock lock(mutex_);
  return held_;
}

std::size_t LiveBlocks::count() const {
  const std::scoped_lock lock(mutex_);
  return blocks_.size();
}

void LiveBlocks::reset_peak() {
  const std::scoped_lock lock(mutex_);
  held_.reset_peak();
}

}  // namespace memstress
