#pragma once

// Live blocks by address: an open-addressing hash table with linear probing and backward-shift deletion
// (no tombstones), so lookups, inserts and erases touch one or two cache lines and never allocate except
// when the table grows. Address 0 marks an empty slot (no block lives at address 0). Not thread-safe:
// each stream's pools own one, under their lock.

#include <bit>
#include <cstdint>
#include <vector>

namespace memstress::caching {

template <typename Value>
class AddressMap {
 public:
  AddressMap() : slots_(kInitial) {}

  [[nodiscard]] Value* find(std::uintptr_t key) const noexcept {
    for (std::size_t i = index(key);; i = next(i)) {
      if (slots_[i].key == key) {
        return slots_[i].value;
      }
      if (slots_[i].key == 0) {
        return nullptr;
      }
    }
  }

  void insert(std::uintptr_t key, Value* value) {
    if ((size_ + 1) * 2 > slots_.size()) {
      grow();
    }
    std::size_t i = index(key);
    while (slots_[i].key != 0) {
      i = next(i);
    }
    slots_[i] = Slot{key, value};
    ++size_;
  }

  // Removes `key` and returns its value (nullptr when absent).
  Value* erase(std::uintptr_t key) noexcept {
    std::size_t i = index(key);
    while (slots_[i].key != key) {
      if (slots_[i].key == 0) {
        return nullptr;
      }
      i = next(i);
    }
    Value* value = slots_[i].value;
    // Backward shift: move later entries of the probe run into the hole, so no tombstone is needed.
    for (std::size_t j = next(i);; j = next(j)) {
      if (slots_[j].key == 0) {
        break;
      }
      const std::size_t home = index(slots_[j].key);
      const bool between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
      if (!between) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = Slot{};
    --size_;
    return value;
  }

  [[nodiscard]] std::size_t size() const noexcept { return size_; }

  template <typename F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_) {
      if (s.key != 0) {
        f(s.key, s.value);
      }
    }
  }

 private:
  static constexpr std::size_t kInitial = 2;  // grows by doubling: a stream holding one block costs 32 bytes
  struct Slot {
    std::uintptr_t key = 0;
    Value* value = nullptr;
  };

  [[nodiscard]] std::size_t index(std::uintptr_t key) const noexcept {
    // Block addresses are multiples of 512: mix the bits before masking.
    return static_cast<std::size_t>((key >> 9U) * 0x9E3779B97F4A7C15ULL >> 20U) & (slots_.size() - 1);
  }
  [[nodiscard]] std::size_t next(std::size_t i) const noexcept { return (i + 1) & (slots_.size() - 1); }

  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    size_ = 0;
    for (const Slot& s : old) {
      if (s.key != 0) {
        insert(s.key, s.value);
      }
    }
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

}  // namespace memstress::caching
