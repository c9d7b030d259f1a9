#pragma once

// Stream identity -> its pools, looked up without a lock on every allocation. Open addressing over a
// fixed table; entries are only ever added (under a mutex), so a reader that sees a slot's value also
// sees its key. A key is looked for at most kMaxProbe slots from its own; one that finds no room there
// goes to a mutex-guarded map. (Probing the whole table once it filled made every lookup of a stream past
// the first thousand cost a thousand slots: a trace of 10,000 streams spent a third of its replay there.)

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace memstress::caching {

template <typename Value>
class StreamTable {
 public:
  [[nodiscard]] Value* find(std::uintptr_t key) const {
    bool in_table = false;
    if (Value* v = find_in_table(key, in_table)) {
      return v;
    }
    if (!in_table && !overflow_used_.load(std::memory_order_acquire)) {
      return nullptr;
    }
    const std::scoped_lock lock(mutex_);
    return find_overflow_locked(key);
  }

  // Adds key -> value unless the key is there already; returns the value now stored.
  Value* insert(std::uintptr_t key, Value* value) {
    const std::scoped_lock lock(mutex_);
    bool in_table = false;
    if (Value* existing = find_in_table(key, in_table)) {
      return existing;
    }
    if (Value* existing = find_overflow_locked(key)) {
      return existing;
    }
    for (std::size_t probe = 0, i = slot_of(key); probe < kMaxProbe; ++probe, i = (i + 1) & (kSlots - 1)) {
      if (slots_[i].value.load(std::memory_order_relaxed) == nullptr) {
        slots_[i].key.store(key, std::memory_order_relaxed);
        slots_[i].value.store(value, std::memory_order_release);
        return value;
      }
    }
    overflow_.emplace(key, value);
    overflow_used_.store(true, std::memory_order_release);
    return value;
  }

 private:
  static constexpr std::size_t kSlots = 1024;
  static constexpr std::size_t kMaxProbe = 32;
  struct Slot {
    std::atomic<std::uintptr_t> key{0};
    std::atomic<Value*> value{nullptr};
  };

  static std::size_t slot_of(std::uintptr_t key) noexcept {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ULL) >> 54U) & (kSlots - 1);
  }
  // The table alone. `full` is set when kMaxProbe slots were probed without finding an empty one, so the
  // key may be in the overflow map.
  Value* find_in_table(std::uintptr_t key, bool& full) const noexcept {
    for (std::size_t probe = 0, i = slot_of(key); probe < kMaxProbe; ++probe, i = (i + 1) & (kSlots - 1)) {
      Value* v = slots_[i].value.load(std::memory_order_acquire);
      if (v == nullptr) {
        return nullptr;
      }
      if (slots_[i].key.load(std::memory_order_relaxed) == key) {
        return v;
      }
    }
    full = true;
    return nullptr;
  }
  // Callers hold mutex_.
  Value* find_overflow_locked(std::uintptr_t key) const {
    const auto it = overflow_.find(key);
    return it == overflow_.end() ? nullptr : it->second;
  }

  std::array<Slot, kSlots> slots_{};
  mutable std::mutex mutex_;
  std::unordered_map<std::uintptr_t, Value*> overflow_;
  std::atomic<bool> overflow_used_{false};
};

}  // namespace memstress::caching
