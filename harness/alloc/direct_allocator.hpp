#pragma once

#include <mutex>
#include <unordered_map>

#include "harness/alloc/allocator.hpp"
#include "harness/stats/counter.hpp"

namespace memstress {

// The `direct` peer: every request goes to the device (cudaMalloc / cudaFree on a GPU). No caching, so
// reserved equals allocated; it is the baseline the caching allocators are measured against.
class DirectAllocator final : public Allocator {
 public:
  explicit DirectAllocator(DeviceBackend& backend) : backend_(backend) {}
  ~DirectAllocator() override;
  DirectAllocator(const DirectAllocator&) = delete;
  DirectAllocator& operator=(const DirectAllocator&) = delete;
  DirectAllocator(DirectAllocator&&) = delete;
  DirectAllocator& operator=(DirectAllocator&&) = delete;

  [[nodiscard]] std::string_view name() const noexcept override { return "direct"; }
  [[nodiscard]] DeviceBackend& backend() const noexcept override { return backend_; }
  [[nodiscard]] MemoryStats memory_stats() const override;
  void reset_peak_stats() override;

 private:
  void* do_allocate(std::size_t bytes, StreamRef stream) override;
  void do_deallocate(void* ptr) override;

  DeviceBackend& backend_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, std::size_t> live_;
  StatCounter allocated_;
  std::int64_t num_ooms_ = 0;
  std::int64_t num_device_alloc_ = 0;
  std::int64_t num_device_free_ = 0;
};

}  // namespace memstress
