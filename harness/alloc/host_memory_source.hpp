#pragma once

// The seam below the pinned host cache: where host blocks come from and go back to, and how the cache
// learns that the device has finished with a block. Two sources:
//   `cuda`  page-locked memory from cudaHostAlloc(portable | mapped) / cudaFreeHost; completions are CUDA
//           events from a pool (cuda_host_memory_source.hpp). Needs a driver and a GPU.
//   `plain` page-aligned ordinary memory (std::aligned_alloc): for tests and machines without a GPU. It
//           says pinned() == false so callers can report that transfers from it are pageable, and it has
//           no streams, so its completions are always empty (a freed block is reusable at once).
// Tests add their own sources (failing, counting, with hand-driven completions) through the same seam.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>

#include "harness/memory/stream_ref.hpp"

namespace memstress {

// The alignment of every block a source returns, and the granularity of sizes it is asked for.
inline constexpr std::size_t kHostPageBytes = 4096;

class HostMemorySource;

// A point in one stream's work, recorded when a block is freed: the block may be handed out again once
// every completion recorded for it is done. Move-only; it gives its resource (a pooled CUDA event) back to
// its source when destroyed, so the source must outlive it. An empty completion is done from the start.
class Completion {
 public:
  Completion() = default;
  ~Completion() { reset(); }
  Completion(Completion&& other) noexcept
      : source_(std::exchange(other.source_, nullptr)), token_(std::exchange(other.token_, 0)) {}
  Completion& operator=(Completion&& other) noexcept;
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;

  [[nodiscard]] bool empty() const noexcept { return source_ == nullptr; }
  // Non-blocking: true once the stream's work before the record point has finished.
  [[nodiscard]] bool done() const;
  // Blocks until done().
  void wait() const;

 private:
  friend class HostMemorySource;
  Completion(HostMemorySource& source, std::uintptr_t token) noexcept : source_(&source), token_(token) {}
  void reset() noexcept;

  HostMemorySource* source_ = nullptr;
  std::uintptr_t token_ = 0;
};

// Thread-safe: the cache calls allocate/deallocate outside its own lock, from any thread.
class HostMemorySource {
 public:
  HostMemorySource() = default;
  virtual ~HostMemorySource() = default;
  HostMemorySource(const HostMemorySource&) = delete;
  HostMemorySource& operator=(const HostMemorySource&) = delete;
  HostMemorySource(HostMemorySource&&) = delete;
  HostMemorySource& operator=(HostMemorySource&&) = delete;

  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  // True when the memory is page-locked (DMA-able without a staging copy).
  [[nodiscard]] virtual bool pinned() const noexcept = 0;
  // `bytes` is a non-zero multiple of kHostPageBytes. Returns memory aligned to kHostPageBytes, or nullptr
  // when the source is out of memory (the cache then empties itself and retries); other failures throw.
  [[nodiscard]] virtual void* allocate(std::size_t bytes) = 0;
  // Takes back memory from allocate, with the size it was allocated with. Never throws: a failure is
  // reported on stderr.
  virtual void deallocate(void* ptr, std::size_t bytes) noexcept = 0;

  // Marks the work enqueued on `stream` so far. Sources without streams return an empty completion.
  [[nodiscard]] Completion record(StreamRef stream) { return do_record(stream); }

 protected:
  // For implementations of do_record: a completion that refers back to this source by `token`.
  [[nodiscard]] Completion make_completion(std::uintptr_t token) noexcept { return {*this, token}; }

 private:
  friend class Completion;
  virtual Completion do_record(StreamRef /*stream*/) { return {}; }
  // The token's state; only called for tokens this source handed out and has not had released.
  [[nodiscard]] virtual bool do_done(std::uintptr_t /*token*/) { return true; }
  virtual void do_wait(std::uintptr_t /*token*/) {}
  virtual void do_release(std::uintptr_t /*token*/) noexcept {}
};

// The `plain` source: page-aligned ordinary host memory, not pinned, no streams.
class PlainHostMemorySource final : public HostMemorySource {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "plain"; }
  [[nodiscard]] bool pinned() const noexcept override { return false; }
  [[nodiscard]] void* allocate(std::size_t bytes) override;
  void deallocate(void* ptr, std::size_t bytes) noexcept override;
};

// A source by name: "cuda" or "plain". Throws InputError for any other name, EnvironmentError for "cuda"
// where there is no CUDA device.
std::unique_ptr<HostMemorySource> make_host_memory_source(std::string_view name);

}  // namespace memstress
