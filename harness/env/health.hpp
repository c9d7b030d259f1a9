#pragma once

// GPU health, read from NVML as DCGM's health checks read it, for the `health` workload and through it for
// acceptance profiles (`checks: [{workload: health, metric: ecc.volatile.uncorrected, max: 0}]`).
//
// Note [Health figures]. A reading holds, per GPU:
// - ECC error counts, uncorrected and corrected, volatile (since the driver loaded) and aggregate (lifetime);
// - retired pages (single- and double-bit causes, and whether a retirement is pending: GPUs before Ampere)
//   and remapped rows (correctable, uncorrectable, a remap pending, a remap that failed: Ampere and later);
// - XID events seen since the watch began (the start of the run: NVML delivers only events that occur
//   after an event set registers for them);
// - the PCIe link's generation and width against the most the GPU and its slot support, read while the
//   caller keeps the link busy (an idle link may train down to save power);
// - NVLink: the active links, those present but down, and the change of the active links' data-link error
//   counters (replay, recovery, CRC) since the watch began;
// - the time the clocks were held down since the watch began, by cause (power, thermal, sync boost, board
//   limit, reliability: NVML's violation counters; hardware thermal and power-brake slowdown: NVML's field
//   values), and whether a hardware slowdown or a thermal slowdown is asserted at the moment of reading.
//   The runner also reads the same counters around each bandwidth case (Note [Clocks during a bandwidth
//   case], harness/run/case_clocks.hpp).
// - whether ECC is on (with ECC off the error counts are not given: a profile judges the mode);
// - the processes other than this one that hold a context on the GPU when it is read (Note [Other processes
//   on the GPU], health_nvml.cpp).
// A figure NVML does not give on this GPU (NOT_SUPPORTED, an entry point the driver lacks, no active NVLink)
// is not guessed: it is listed in `not_measured` with why, and a check on it is skipped, not failed. Any
// other failure of a query (the GPU lost, no permission) is in `errors`: the `health` case then fails.

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memstress {

struct HealthFigure {
  std::string_view name;  // "ecc.volatile.uncorrected"
  std::string_view unit;  // "count", "gen", "lanes", "links", "ms", "flag"
  bool lower_is_better;   // false: a fact (the link's generation), not judged by direction
};

// Every figure a reading can hold, in the order rows list them.
[[nodiscard]] std::span<const HealthFigure> health_figures() noexcept;

// The note of one XID event: "xid.events: XID 79 during the run (GPU has fallen off the bus)", with what
// NVIDIA's XID catalog says of the common codes. A note that starts with a figure's name and ": " is about
// that figure: a failed acceptance check on it quotes it (harness/accept/judge.cpp).
[[nodiscard]] std::string xid_note(unsigned long long xid);

struct GpuHealth {
  std::vector<std::pair<std::string, double>> figures;            // measured
  std::vector<std::pair<std::string, std::string>> not_measured;  // figure -> why
  std::vector<std::string> notes;                                 // "XID 79 during the run", ...
  std::vector<std::string> errors;  // queries NVML failed (GPU_IS_LOST, ...): the reading cannot pass
};

class HealthWatch {
 public:
  virtual ~HealthWatch() = default;
  HealthWatch() = default;
  HealthWatch(const HealthWatch&) = delete;
  HealthWatch& operator=(const HealthWatch&) = delete;
  HealthWatch(HealthWatch&&) = delete;
  HealthWatch& operator=(HealthWatch&&) = delete;

  // Why nothing can be read ("NVML: not loadable: ..."), or "" when read() gives figures.
  [[nodiscard]] virtual std::string unavailable() const = 0;
  // Health now; throttle times and XID events counted from the watch's start. Not thread-safe.
  [[nodiscard]] virtual GpuHealth read() = 0;
  // The time the clocks were held down since the watch began, by cause (the throttle.* figures, in ms), for
  // each cause this GPU counts; the rest are absent. Cheap (no ECC or link queries). Not thread-safe.
  [[nodiscard]] virtual std::vector<std::pair<std::string, double>> throttle_ms() = 0;
};

// The watch of a CUDA GPU through NVML (found by PCI bus id, else UUID). Never throws: where NVML is
// unusable or has no such GPU, unavailable() says why.
[[nodiscard]] std::unique_ptr<HealthWatch> nvml_health_watch(const std::string& pci_bus_id,
                                                             const std::string& uuid);

// Injected figures, for the simulated device and tests (MEMSTRESS_INJECT_HEALTH=FILE): a JSON object
//   {"figures": {"ecc.volatile.uncorrected": 2, ...}, "not_measured": {"nvlink.errors": "no active NVLink"},
//    "xid": [79]}
// Figures must be known names with numbers of 0 or more; `xid` adds its events to xid.events. A throttle.*
// figure is also the time each case the runner watches sees added while it runs (throttle_ms() grows by it
// at every call, so a case, read before and after, sees it once). Throws
// InputError naming `name` (the file) and what is wrong.
[[nodiscard]] std::unique_ptr<HealthWatch> injected_health_watch(std::string_view json,
                                                                 const std::string& name);
[[nodiscard]] std::unique_ptr<HealthWatch> injected_health_watch(const std::filesystem::path& file);

// The watch a run keeps from its start: NVML's for a CUDA GPU (by UUID); on the simulated device the
// figures MEMSTRESS_INJECT_HEALTH names (InputError for a bad file), else none (null).
[[nodiscard]] std::unique_ptr<HealthWatch> run_health_watch(bool cuda_gpu, const std::string& uuid);

}  // namespace memstress
