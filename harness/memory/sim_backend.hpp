#pragma once

#include <cstdint>
#include <map>
#include <mutex>

#include "harness/memory/backend.hpp"

namespace memstress {

// A device of `capacity` bytes with no memory behind its addresses.
//
// Accounting follows the driver closely enough for allocator studies: a reservation is charged rounded
// up to kSmallGranularity (512 B) when it is at most 1 MiB and to kPageBytes (2 MiB, the GPU's large
// page) otherwise, and fails only when the charge would pass the capacity. Physical memory on a GPU is
// not fragmented by addresses (the driver maps pages anywhere), so addresses come from a virtual range
// four times the capacity, first fit with coalescing; exhausting it would need a pathological pattern
// and is reported as out of memory like the real thing. Addresses start at a fixed base, so the same
// sequence of calls gives the same addresses on every machine.
class SimBackend final : public DeviceBackend {
 public:
  static constexpr std::uint64_t kSmallGranularity = 512;
  static constexpr std::uint64_t kPageBytes = 2ULL << 20;
  static constexpr std::uint64_t kBaseAddress = 0x7f0000000000ULL;

  explicit SimBackend(std::uint64_t capacity);

  [[nodiscard]] const DeviceInfo& info() const noexcept override { return info_; }
  [[nodiscard]] bool has_memory() const noexcept override { return false; }
  [[nodiscard]] MemInfo mem_info() const override;
  [[nodiscard]] void* try_reserve(std::size_t bytes) override;
  void release(void* address, std::size_t bytes) noexcept override;
  void synchronize() override {}

  // The bytes a reservation of `bytes` is charged against the capacity.
  [[nodiscard]] static std::uint64_t charged_bytes(std::uint64_t bytes) noexcept;

 private:
  DeviceInfo info_;
  mutable std::mutex mutex_;
  std::uint64_t used_ = 0;                       // charged bytes currently reserved
  std::map<std::uint64_t, std::uint64_t> free_;  // free address ranges: start -> length
  std::map<std::uint64_t, std::uint64_t> live_;  // reserved ranges: start -> charged length
};

}  // namespace memstress
