#pragma once

// Owners of single blocks from the shared allocators, for workloads that hold a few buffers for a whole
// case: the block goes back to its allocator when the owner goes, also when a case ends in an exception.

#include <cstddef>
#include <exception>
#include <utility>

#include "harness/alloc/allocator.hpp"
#include "harness/alloc/pinned_host_allocator.hpp"

namespace memstress::suites {

namespace detail {
// Reports a failed free on stderr: owners free in destructors and must not throw.
void report_free_failure(const char* what) noexcept;
}  // namespace detail

// A block from `Source` (an Allocator or the PinnedHostAllocator): move-only, freed on destruction.
template <typename Source>
class OwnedBlock {
 public:
  OwnedBlock() = default;
  ~OwnedBlock() { reset(); }
  OwnedBlock(OwnedBlock&& o) noexcept
      : source_(o.source_), data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  OwnedBlock& operator=(OwnedBlock&& o) noexcept {
    if (this != &o) {
      reset();
      source_ = o.source_;
      data_ = std::exchange(o.data_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  OwnedBlock(const OwnedBlock&) = delete;
  OwnedBlock& operator=(const OwnedBlock&) = delete;

  [[nodiscard]] void* get() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return bytes_; }
  template <typename T>
  [[nodiscard]] T* as() const noexcept {
    return static_cast<T*>(data_);
  }
  // The block is used on `stream` too: it is not reused before that stream passes its free.
  void record_stream(StreamRef stream) const { source_->record_stream(data_, stream); }
  // Frees the block now (stream-ordered for device blocks).
  void reset() noexcept {
    if (data_ != nullptr) {
      try {
        source_->deallocate(data_);
      } catch (const std::exception& e) {
        detail::report_free_failure(e.what());
      }
    }
    data_ = nullptr;
    bytes_ = 0;
  }

 protected:
  OwnedBlock(Source& source, void* data, std::size_t bytes) noexcept
      : source_(&source), data_(data), bytes_(bytes) {}

 private:
  Source* source_ = nullptr;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// A device block from the shared allocator, allocated on `stream`.
class DeviceBlock : public OwnedBlock<Allocator> {
 public:
  DeviceBlock() = default;
  DeviceBlock(Allocator& allocator, std::size_t bytes, StreamRef stream)
      : OwnedBlock(allocator, allocator.allocate(bytes, stream), bytes) {}
};

// A block from the shared pinned host cache.
class HostBlock : public OwnedBlock<PinnedHostAllocator> {
 public:
  HostBlock() = default;
  HostBlock(PinnedHostAllocator& allocator, std::size_t bytes)
      : OwnedBlock(allocator, allocator.allocate(bytes), bytes) {}
};

}  // namespace memstress::suites
