#pragma once

// The allocator seam (RMM's shape): a non-virtual public interface over private virtual hooks, so
// checks and accounting common to every allocator live in one place. One instance per device is
// shared by every workload, stream and thread of the process; implementations are thread-safe.

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "harness/core/error.hpp"
#include "harness/memory/stream_ref.hpp"
#include "harness/stats/memory_stats.hpp"

namespace memstress {

class DeviceBackend;

class Allocator {
 public:
  virtual ~Allocator() = default;
  Allocator() = default;
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;
  Allocator(Allocator&&) = delete;
  Allocator& operator=(Allocator&&) = delete;

  // Returns device memory of at least `bytes` usable on `stream`, aligned to at least 256 bytes
  // (nullptr for 0 bytes, as cudaMalloc and PyTorch do). Throws OutOfMemoryError (with the allocator's
  // full explanation) when it cannot.
  [[nodiscard]] void* allocate(std::size_t bytes, StreamRef stream = {}) {
    return do_allocate(bytes, stream);
  }
  // allocate(), for callers that expect to be refused again and again (a replay at capacity): a refusal
  // returns no value, and the explanation OutOfMemoryError would have carried is written to `refusal` only
  // when one is given (the throw and the explanation cost more than the rest of a refusal). Errors other
  // than running out of memory still throw.
  [[nodiscard]] std::optional<void*> try_allocate(std::size_t bytes, StreamRef stream = {},
                                                  std::string* refusal = nullptr) {
    return do_try_allocate(bytes, stream, refusal);
  }
  // Returns memory from allocate. Null is ignored.
  void deallocate(void* ptr) {
    if (ptr != nullptr) {
      do_deallocate(ptr);
    }
  }
  // Returns cached, unused device memory to the device.
  void empty_cache() { do_empty_cache(); }
  // `ptr` is in use on `stream` too (besides the stream it was allocated on): when it is freed, its
  // memory is not reused until the work enqueued on `stream` by then has completed. PyTorch's
  // Tensor.record_stream. Allocators that free synchronously ignore it.
  void record_stream(void* ptr, StreamRef stream) {
    if (ptr != nullptr) {
      do_record_stream(ptr, stream);
    }
  }

  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  [[nodiscard]] virtual DeviceBackend& backend() const noexcept = 0;
  [[nodiscard]] virtual MemoryStats memory_stats() const = 0;
  virtual void reset_peak_stats() = 0;
  // PyTorch-style memory snapshot (segments and blocks) where the allocator keeps one; null otherwise.
  [[nodiscard]] virtual nlohmann::json snapshot() const { return nullptr; }

 private:
  virtual void* do_allocate(std::size_t bytes, StreamRef stream) = 0;
  // allocate()'s OutOfMemoryError caught, unless an allocator refuses more cheaply.
  virtual std::optional<void*> do_try_allocate(std::size_t bytes, StreamRef stream, std::string* refusal) {
    try {
      return do_allocate(bytes, stream);
    } catch (const OutOfMemoryError& e) {
      if (refusal != nullptr) {
        *refusal = e.what();
      }
      return std::nullopt;
    }
  }
  virtual void do_deallocate(void* ptr) = 0;
  virtual void do_empty_cache() {}
  virtual void do_record_stream(void* /*ptr*/, StreamRef /*stream*/) {}
};

}  // namespace memstress
