#pragma once

// A memory_resource for the caching allocator's bookkeeping: set nodes and blocks, a few fixed sizes
// allocated and freed on every call. Per-size free lists carved from chunks make each allocation
// and free a handful of instructions (libstdc++'s unsynchronized_pool_resource spent ~900 instructions
// per alloc+free pair here, measured with callgrind). Memory goes back to the system only when the
// resource dies. Not thread-safe: each stream's pools own one, under their lock. Chunks start at 384 bytes
// and double up to 64 KiB, uninitialised: a stream that holds a block or two costs 384 bytes (its segment,
// the remainder split off it and that remainder's free-set node: 208 bytes; with expandable segments, three
// blocks and two set nodes: 336), not 64 KiB zeroed (a trace of many streams, each allocating once, paid that
// for every stream) nor 1 KiB (a doctor of 200,000 such streams, 200 MB a replay). Nodes are blocks (80
// bytes) and set nodes (40): the free lists go up to 128 bytes.

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>
#include <memory_resource>
#include <vector>

namespace memstress::caching {

class NodeResource final : public std::pmr::memory_resource {
 public:
  NodeResource() = default;
  ~NodeResource() override = default;
  NodeResource(const NodeResource&) = delete;
  NodeResource& operator=(const NodeResource&) = delete;
  NodeResource(NodeResource&&) = delete;
  NodeResource& operator=(NodeResource&&) = delete;

 private:
  static constexpr std::size_t kGranule = 16;   // what operator new guarantees, enough for every node
  static constexpr std::size_t kMaxNode = 128;  // larger requests go to the upstream
  static constexpr std::size_t kFirstChunk = 384;
  static constexpr std::size_t kChunk = std::size_t{64} * 1024;

  static constexpr std::size_t size_class(std::size_t bytes) noexcept {
    return (bytes + kGranule - 1) / kGranule;
  }

  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    if (bytes > kMaxNode || alignment > kGranule) {
      return std::pmr::new_delete_resource()->allocate(bytes, alignment);
    }
    const std::size_t cls = size_class(bytes);
    if (void* p = free_[cls]) {
      free_[cls] = *static_cast<void**>(p);
      return p;
    }
    const std::size_t size = cls * kGranule;
    if (left_ < size) {
      const std::size_t chunk = chunks_.empty() ? kFirstChunk : std::min(2 * chunk_, kChunk);
      chunks_.push_back(
          std::make_unique_for_overwrite<std::byte[]>(chunk));  // NOLINT(modernize-avoid-c-arrays)
      cursor_ = chunks_.back().get();
      left_ = chunk;
      chunk_ = chunk;
    }
    void* p = cursor_;
    cursor_ += size;
    left_ -= size;
    return p;
  }

  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    if (bytes > kMaxNode || alignment > kGranule) {
      std::pmr::new_delete_resource()->deallocate(p, bytes, alignment);
      return;
    }
    const std::size_t cls = size_class(bytes);
    *static_cast<void**>(p) = free_[cls];
    free_[cls] = p;
  }

  [[nodiscard]] bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }

  std::array<void*, (kMaxNode + kGranule - 1) / kGranule + 1> free_{};
  std::vector<std::unique_ptr<std::byte[]>> chunks_;  // NOLINT(modernize-avoid-c-arrays)
  std::byte* cursor_ = nullptr;
  std::size_t left_ = 0;
  std::size_t chunk_ = 0;  // the last chunk's size
};

}  // namespace memstress::caching
