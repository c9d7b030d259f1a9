#pragma once

// Note [Planted faults]
// =====================
// Acceptance must be shown to FAIL a faulty GPU, and some faults cannot be caused on a healthy GPU without
// touching what must never be touched to make one (clocks, power limits, MIG, resets): a stuck bit, a bit
// that reads wrong once, host memory left pageable where the profile asks for pinned. A build configured
// with -DMEMSTRESS_FAULT_HOOKS=ON (the `faults` preset) reads MEMSTRESS_PLANT_FAULT, a comma-separated list
// of:
//   stuck:WORD:BIT:VALUE  before every pattern check, bit BIT (0-63) of 8-byte word WORD of the buffer
//                         checked is set to VALUE (0 or 1) in device memory: a stuck cell, which both reads
//                         of the integrity check see (persistent) whenever the pattern's bit differs;
//   flip:WORD:BIT         the first check of each checker reads that bit flipped (it is flipped in memory
//                         just before that check and flipped back just after): a bad read, which the
//                         second read of the integrity check does not see (transient);
//   pageable              the run's pinned host cache hands out ordinary pageable memory;
//   nopeer:FROM:TO        CUDA device FROM is refused peer access to device TO (as cudaDeviceCanAccessPeer
//                         answers on a node whose link or driver refuses it), the other pairs as they are;
//   after:SECONDS:KIND    from SECONDS into a burn (`memstress burn`) on: KIND `flip` (a bit of the memory
//                         stress's buffer flipped after each fill), `slow` (the stress does half its work: a
//                         throughput drop), `throttle` (the GPU reads as slowed for heat, HW thermal), or
//                         `xid:CODE` (an XID event of that code, once);
//   hang                  the first case of a `run` or `accept` that runs never returns, on every rank (the
//                         process sleeps, as one stuck in a GPU call that never comes back does): what a
//                         check with a time budget (the Slurm gate, scripts/slurm/memstress-gate) must
//                         survive.
// and, in the same builds, MEMSTRESS_INJECT_HEALTH on a real GPU overlays its figures on NVML's readings
// (ECC, remapped rows, XID, NVLink errors: harness/env/health.hpp). scripts/lab/gpu-faults uses both.
//
// Every other build never reads either variable on a real GPU: planted_faults() is empty, so no fault can
// be planted in a run whose verdict anyone acts on. On the simulated device, whose verdicts accept no GPU,
// every build plants a burn's timed faults and the hang (simulated_device_faults()), so that CI tests them.
// The parser is built everywhere, so CI tests it.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memstress {

struct BitFault {
  enum class Kind : std::uint8_t { stuck, flip };
  Kind kind = Kind::stuck;
  std::uint64_t word = 0;  // 8-byte word index in the checked buffer
  unsigned bit = 0;        // 0-63
  bool value = false;      // stuck: the value the bit holds
};

struct RefusedPeer {
  int from = 0;
  int to = 0;
  bool operator==(const RefusedPeer&) const = default;
};

// A burn's fault that begins SECONDS into the burn (after:SECONDS:KIND).
struct TimedFault {
  enum class Kind : std::uint8_t { flip, slow, throttle, xid };
  Kind kind = Kind::flip;
  double after_s = 0;
  unsigned long long xid = 0;  // Kind::xid: the event's code
  bool operator==(const TimedFault&) const = default;
};

struct PlantedFaults {
  std::vector<BitFault> bits;
  std::vector<TimedFault> timed;
  bool pageable_host = false;
  bool hang = false;
  std::vector<RefusedPeer> refused_peers;
  [[nodiscard]] bool empty() const noexcept {
    return bits.empty() && timed.empty() && !pageable_host && !hang && refused_peers.empty();
  }
  [[nodiscard]] bool refuses(int from, int to) const noexcept;
};

// Parses MEMSTRESS_PLANT_FAULT's text (grammar above). Throws InputError naming the variable and the item.
[[nodiscard]] PlantedFaults parse_planted_faults(std::string_view text);

// Whether this build was configured with MEMSTRESS_FAULT_HOOKS=ON.
[[nodiscard]] bool fault_hooks_built() noexcept;

// The faults MEMSTRESS_PLANT_FAULT asks for in a fault-hook build; empty in every other build.
[[nodiscard]] PlantedFaults planted_faults();

// The faults a run on the simulated device plants (a burn's timed faults, the hang): MEMSTRESS_PLANT_FAULT's
// in any build, since the simulated device's verdict accepts no GPU (tests run whole burns and hung checks
// with faults there); empty where it is not set.
[[nodiscard]] PlantedFaults simulated_device_faults();

// What a run should say of them on stderr before it starts: in a fault-hook build, that it is one (its
// results are for tests, never for accepting a GPU); in any other, that MEMSTRESS_PLANT_FAULT is set and
// ignored, where it is. "" when there is nothing to say.
// `simulated_device`: the run is on the simulated device, where a burn plants the timed faults in any build.
[[nodiscard]] std::string fault_hooks_note(bool simulated_device = false);

}  // namespace memstress
