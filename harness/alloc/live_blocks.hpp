#pragma once

// What a peer that hands frees to another library (async, rmm-*, plugin:*) must remember of each live
// allocation, since Allocator::deallocate gets only the pointer: its size and the streams it is used on
// (StreamUses), and the bytes held in all (current and peak). Thread-safe: one mutex guards it all.

#include <cstddef>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "harness/alloc/stream_uses.hpp"
#include "harness/stats/counter.hpp"

namespace memstress {

class LiveBlocks {
 public:
  struct Block {
    std::size_t bytes = 0;
    StreamUses streams;
  };

  // Error (a check failure, exit 1) naming `who` when `ptr` is still live: the library handed it out twice.
  void add(void* ptr, std::size_t bytes, StreamRef stream, std::string_view who);
  // Removes and returns the block; InputError "<who>: deallocate of P which it did not allocate" if unknown.
  Block take(void* ptr, std::string_view who);
  // Removes the block and hands it to `free` (which returns it to the library); if `free` throws, the block
  // is put back, still live, so that a failed free (an event or stream call) loses nothing.
  template <typename Free>
  void release(void* ptr, std::string_view who, Free&& free) {
    Block block = take(ptr, who);
    try {
      std::forward<Free>(free)(static_cast<const Block&>(block));
    } catch (...) {
      restore(ptr, std::move(block));
      throw;
    }
  }
  // record_stream: `ptr` is used on `stream` too; InputError naming `who` if unknown.
  void record(void* ptr, StreamRef stream, std::string_view who);
  // Everything still live, removed (teardown).
  std::vector<std::pair<void*, Block>> drain();

  [[nodiscard]] StatCounter held() const;  // bytes held by callers
  [[nodiscard]] std::size_t count() const;
  void reset_peak();

 private:
  void restore(void* ptr, Block block);

  mutable std::mutex mutex_;
  std::unordered_map<void*, Block> blocks_;
  StatCounter held_;
};

}  // namespace memstress
