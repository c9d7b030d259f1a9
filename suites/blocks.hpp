#pragma once

// Owners of single blocks from the shared allocators, for workloads that hold a few buffers for a whole
// case: the block goes back to its allocator when the owner goes, also when a case ends in an exception.

#include <cstddef>
#include <utility>

#include "harness/alloc/allocator.hpp"
#include "harness/alloc/pinned_host_allocator.hpp"

namespace memstress::suites {

// A device block from the shared allocator, allocated on `stream`.
class DeviceBlock {
 public:
  DeviceBlock() = default;
  DeviceBlock(Allocator& allocator, std::size_t bytes, StreamRef stream)
      : allocator_(&allocator), data_(allocator.allocate(bytes, stream)), bytes_(bytes) {}
  ~DeviceBlock() { reset(); }
  DeviceBlock(DeviceBlock&& o) noexcept
      : allocator_(o.allocator_),
        data_(std::exchange(o.data_, nullptr)),
        bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBlock& operator=(DeviceBlock&& o) noexcept {
    if (this != &o) {
      reset();
      allocator_ = o.allocator_;
      data_ = std::exchange(o.data_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  DeviceBlock(const DeviceBlock&) = delete;
  DeviceBlock& operator=(const DeviceBlock&) = delete;

  [[nodiscard]] void* get() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return bytes_; }
  template <typename T>
  [[nodiscard]] T* as() const noexcept {
    return static_cast<T*>(data_);
  }
  // The block is used on `stream` too: it is not reused before that stream passes its free.
  void record_stream(StreamRef stream) const { allocator_->record_stream(data_, stream); }
  void reset() noexcept;

 private:
  Allocator* allocator_ = nullptr;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// A block from the shared pinned host cache.
class HostBlock {
 public:
  HostBlock() = default;
  HostBlock(PinnedHostAllocator& allocator, std::size_t bytes)
      : allocator_(&allocator), data_(allocator.allocate(bytes)), bytes_(bytes) {}
  ~HostBlock() { reset(); }
  HostBlock(HostBlock&& o) noexcept
      : allocator_(o.allocator_),
        data_(std::exchange(o.data_, nullptr)),
        bytes_(std::exchange(o.bytes_, 0)) {}
  HostBlock& operator=(HostBlock&& o) noexcept {
    if (this != &o) {
      reset();
      allocator_ = o.allocator_;
      data_ = std::exchange(o.data_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  HostBlock(const HostBlock&) = delete;
  HostBlock& operator=(const HostBlock&) = delete;

  [[nodiscard]] void* get() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return bytes_; }
  void record_stream(StreamRef stream) const { allocator_->record_stream(data_, stream); }
  void reset() noexcept;

 private:
  PinnedHostAllocator* allocator_ = nullptr;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace memstress::suites
