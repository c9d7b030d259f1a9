#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "harness/memory/backend.hpp"

namespace memstress {

// Where the simulated device places a reservation in its address range.
//   first_fit — the lowest free range that fits (the default; addresses grow as reservations come).
//   cuda_like — reservations up to kPageBytes (2 MiB) as first_fit, larger ones from the top of the range
//     down, as the CUDA driver was seen to place cudaMalloc on an H100 (driver 580). Addresses matter to
//     allocators that break ties by address (PyTorch's caching allocator takes the lowest-addressed of
//     equal-sized free blocks), so trace replay uses this order: with it the four committed PyTorch
//     traces (results/traces/torch-2.11-h100) replay to PyTorch's reserved and allocated peaks to the
//     byte; first_fit gets transformer_train's reserved peak 0.6% high.
enum class SimAddressOrder : std::uint8_t { first_fit, cuda_like };

// A segment the CUDA driver placed, as a snapshot recorded it: `offset` from the lowest segment address.
struct PlannedReservation {
  std::uint64_t bytes = 0;
  std::uint64_t offset = 0;
};

// A device of `capacity` bytes with no memory behind its addresses.
//
// Accounting follows the driver closely enough for allocator studies: a reservation is charged rounded
// up to kSmallGranularity (512 B) when it is at most 1 MiB and to kPageBytes (2 MiB, the GPU's large
// page) otherwise, and fails only when the charge would pass the capacity. Physical memory on a GPU is
// not fragmented by addresses (the driver maps pages anywhere), so addresses come from a virtual range
// four times the capacity, first fit with coalescing; large reservations are page aligned as the
// driver's are. Virtual ranges for expandable segments come from a separate, much larger region and
// cost nothing until pages are mapped into them. Addresses start at fixed bases, so the same sequence
// of calls gives the same addresses on every machine.
//
// follow_placements: the placements a snapshot recorded, for replaying the allocator that recorded them.
// The n-th reservation goes where the driver put the n-th segment, in a region of its own above the
// usual range, as long as the sizes agree and that range is free; the first that does not ends the plan
// for good and reservations go back to `order`. The driver's placement is not a rule memstress can
// rebuild (on an H100 it packs segments of a few sizes into regions, sometimes upward, sometimes down),
// and it decides which of two equal free blocks PyTorch's best fit takes (the lowest address): followed,
// a replay of the setting a snapshot was recorded under reserves what PyTorch reserved.
//
// Simulated streams run nothing, so work "completes" at once: an event is complete when recorded.
// Tests hold a stream to model work still running on it; its events complete when it is released or
// when the host synchronizes on them.
class SimBackend final : public DeviceBackend {
 public:
  static constexpr std::uint64_t kSmallGranularity = 512;
  static constexpr std::uint64_t kPageBytes = 2ULL << 20;
  static constexpr std::uint64_t kBaseAddress = 0x7f0000000000ULL;
  static constexpr std::uint64_t kRangeBase = 0x100000000000ULL;  // reserve_address_range starts here
  // Note [Simulated address ranges]
  // A simulated device has no memory to address, so its address ranges need not fit a GPU's 48 bits: once
  // the 111 TiB below kBaseAddress are taken, reservations continue above 2^48, up to 2^62. PyTorch's
  // expandable segments reserve 1.125 times the device for every stream, and on the doctor's device with no
  // limit (1 TiB) the 98th stream's reservation failed, every later stream's allocation ran out of memory
  // after a release-and-retry over all streams: wrong answers, in time quadratic in the streams. Requests
  // past 2^62 bytes still fail as on a GPU.
  static constexpr std::uint64_t kHighRangeBase = 1ULL << 48;
  static constexpr std::uint64_t kHighRangeEnd = 1ULL << 62;
  // The largest capacity: its address range (four times it, above kBaseAddress) and a placement plan's
  // region above that stay within the 48 bits of a GPU's virtual addresses.
  static constexpr std::uint64_t kMaxCapacity = 16ULL << 40;

  explicit SimBackend(std::uint64_t capacity, SimAddressOrder order = SimAddressOrder::first_fit);

  [[nodiscard]] const DeviceInfo& info() const noexcept override { return info_; }
  [[nodiscard]] bool has_memory() const noexcept override { return false; }
  [[nodiscard]] MemInfo mem_info() const override;
  [[nodiscard]] void* try_reserve(std::size_t bytes) override;
  void release(void* address, std::size_t bytes) noexcept override;
  void synchronize() override;

  [[nodiscard]] EventHandle record_event(StreamRef stream) override;
  [[nodiscard]] bool event_complete(EventHandle event) override;
  void synchronize_event(EventHandle event) override;
  void release_event(EventHandle event) noexcept override;

  [[nodiscard]] std::uint64_t page_bytes() const noexcept override { return kPageBytes; }
  [[nodiscard]] void* reserve_address_range(std::size_t bytes) override;
  void release_address_range(void* address, std::size_t bytes) noexcept override;
  [[nodiscard]] bool try_map(void* address, std::size_t bytes) override;
  void unmap(void* address, std::size_t bytes) noexcept override;

  void follow_placements(std::vector<PlannedReservation> plan);
  void hold_stream(StreamRef stream);
  void release_stream(StreamRef stream);
  [[nodiscard]] std::size_t live_events() const;
  [[nodiscard]] std::uint64_t mapped_bytes() const;

  // The bytes a reservation of `bytes` is charged against the capacity.
  [[nodiscard]] static std::uint64_t charged_bytes(std::uint64_t bytes) noexcept;

 private:
  struct SimEvent {
    StreamRef stream;
    bool done = false;
  };
  using Ranges = std::map<std::uint64_t, std::uint64_t>;  // start -> length

  DeviceInfo info_;
  SimAddressOrder order_;
  mutable std::mutex mutex_;
  std::uint64_t used_ = 0;                // charged bytes reserved or mapped
  Ranges free_;                           // free addresses for try_reserve
  std::vector<PlannedReservation> plan_;  // follow_placements
  std::size_t plan_next_ = 0;
  bool plan_on_ = false;
  std::uint64_t plan_base_ = 0;  // the plan's region starts here, above free_'s
  Ranges plan_free_;
  Ranges live_;         // reserved: start -> charged length
  Ranges ranges_free_;  // free virtual ranges for reserve_address_range
  Ranges ranges_live_;  // reserved virtual ranges
  Ranges mapped_;       // mapped pieces inside them
  std::map<EventHandle, SimEvent> events_;
  std::vector<StreamRef> held_;
  EventHandle next_event_ = 1;
};

}  // namespace memstress
