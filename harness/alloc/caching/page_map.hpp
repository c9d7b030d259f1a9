#pragma once

// Which stream's pools own the segment holding an address, found without a lock: a two-level radix
// table over 2 MiB pages of the 48-bit address space (the layout of tcmalloc's page map). deallocate()
// uses it to go straight to the owning pools, so frees on different streams never touch a shared lock.
// Writers (segment creation and release, already serialized per owner) store with release; readers
// load with acquire. Leaves are allocated on first use and live as long as the map.
//
// Segments are multiples of 2 MiB; cudaMalloc returns them 2 MiB aligned and reserved ranges are
// aligned by construction. A segment that is not aligned would share a page with its neighbour, so it
// is refused (the caller releases it and reports the anomaly) rather than mapped ambiguously.
//
// Pages past the 48 bits (a simulated device's address ranges, which may go beyond a GPU's: Note
// [Simulated address ranges] in harness/memory/sim_backend.hpp) are kept in a hash map under a
// reader-writer lock instead: few, and never on a real GPU.

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace memstress::caching {

template <typename Owner>
class PageMap {
 public:
  static constexpr unsigned kPageShift = 21;  // 2 MiB
  static constexpr unsigned kLeafBits = 14;
  static constexpr unsigned kRootBits = 48 - kPageShift - kLeafBits;  // the whole 48-bit virtual space

  [[nodiscard]] static bool aligned(std::uintptr_t ptr, std::uint64_t bytes) noexcept {
    constexpr std::uint64_t mask = (std::uint64_t{1} << kPageShift) - 1;
    return (ptr & mask) == 0 && (bytes & mask) == 0;
  }

  // Sets every page of [ptr, ptr + bytes) to `owner` (nullptr clears).
  void assign(std::uintptr_t ptr, std::uint64_t bytes, Owner* owner) {
    const std::uintptr_t end = (ptr + bytes) >> kPageShift;
    std::uintptr_t page = ptr >> kPageShift;
    for (; page < end && page < kLowPages; ++page) {
      leaf(page, true)->at(page & kLeafMask).store(owner, std::memory_order_release);
    }
    if (page < end) {
      const std::unique_lock lock(high_mutex_);
      for (; page < end; ++page) {
        if (owner != nullptr) {
          high_[page] = owner;
        } else {
          high_.erase(page);
        }
      }
    }
  }

  [[nodiscard]] Owner* find(std::uintptr_t ptr) const noexcept {
    const std::uintptr_t page = ptr >> kPageShift;
    if (page >= kLowPages) {
      const std::shared_lock lock(high_mutex_);
      const auto it = high_.find(page);
      return it == high_.end() ? nullptr : it->second;
    }
    const Leaf* l = root_[page >> kLeafBits].load(std::memory_order_acquire);
    return l == nullptr ? nullptr : l->at(page & kLeafMask).load(std::memory_order_acquire);
  }

 private:
  static constexpr std::uintptr_t kLeafMask = (std::uintptr_t{1} << kLeafBits) - 1;
  static constexpr std::uintptr_t kLowPages = std::uintptr_t{1} << (48 - kPageShift);
  using Leaf = std::array<std::atomic<Owner*>, std::size_t{1} << kLeafBits>;

  Leaf* leaf(std::uintptr_t page, bool create) {
    const std::uintptr_t index = page >> kLeafBits;
    Leaf* l = root_.at(index).load(std::memory_order_acquire);
    if (l != nullptr || !create) {
      return l;
    }
    const std::scoped_lock lock(grow_);
    l = root_[index].load(std::memory_order_acquire);
    if (l == nullptr) {
      leaves_[index] = std::make_unique<Leaf>();
      l = leaves_[index].get();
      root_[index].store(l, std::memory_order_release);
    }
    return l;
  }

  std::array<std::atomic<Leaf*>, std::size_t{1} << kRootBits> root_{};
  std::array<std::unique_ptr<Leaf>, std::size_t{1} << kRootBits> leaves_{};
  std::mutex grow_;
  mutable std::shared_mutex high_mutex_;
  std::unordered_map<std::uintptr_t, Owner*> high_;  // pages at and above 2^48
};

}  // namespace memstress::caching
