// A GPU's health read through NVML (see health.hpp, Note [Health figures]).

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/env/health.hpp"
#include "harness/env/nvml_library.hpp"

namespace memstress {
namespace {

// NVML's clock event reasons (nvml.h spells these with the deprecated "Throttle" names).
constexpr unsigned long long kHwSlowdown = 0x8ULL;
constexpr unsigned long long kSwThermalSlowdown = 0x20ULL;
constexpr unsigned long long kHwThermalSlowdown = 0x40ULL;
constexpr unsigned long long kHwPowerBrakeSlowdown = 0x80ULL;

struct Policy {
  nvmlPerfPolicyType_t type;
  const char* figure;
};
constexpr std::array kPolicies = {
    Policy{NVML_PERF_POLICY_POWER, "throttle.power_ms"},
    Policy{NVML_PERF_POLICY_THERMAL, "throttle.thermal_ms"},
    Policy{NVML_PERF_POLICY_SYNC_BOOST, "throttle.sync_boost_ms"},
    Policy{NVML_PERF_POLICY_BOARD_LIMIT, "throttle.board_limit_ms"},
    Policy{NVML_PERF_POLICY_RELIABILITY, "throttle.reliability_ms"},
};
// The hardware slowdowns have no violation counter; NVML gives their time (ns) as field values. The ids are
// written here, not taken from whichever nvml.h the build found: older headers lack these names, and the ids
// are the driver's ABI (R580's NVML answers them; a driver that does not says so per value, and the figure is
// then not measured). The CUDA 13 header agrees:
constexpr unsigned int kFieldHwThermalSlowdown = 270;
constexpr unsigned int kFieldHwPowerBrakeSlowdown = 271;
#ifdef NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN
static_assert(NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN == kFieldHwThermalSlowdown);
static_assert(NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN == kFieldHwPowerBrakeSlowdown);
#endif
struct Field {
  unsigned int id;
  const char* figure;
};
constexpr std::array kFields = {
    Field{kFieldHwThermalSlowdown, "throttle.hw_thermal_ms"},
    Field{kFieldHwPowerBrakeSlowdown, "throttle.hw_power_brake_ms"},
};

class NvmlHealth final : public HealthWatch {
 public:
  NvmlHealth(const std::string& pci_bus_id, const std::string& uuid) {
    const NvmlDeviceLookup found = find_nvml_device(nvml_, pci_bus_id, uuid);
    if (!found.why.empty()) {
      why_ = found.why;
      return;
    }
    device_ = found.device;
    start_events();
    const NvLinks start = nvlinks();
    nvlink_errors_at_start_ = start.errors;
    nvlink_corrected_at_start_ = start.corrected;
    started_ = std::chrono::steady_clock::now();
    baseline_ns_ = throttle_ns();
  }
  ~NvmlHealth() override {
    if (events_ != nullptr && nvml_.api().event_set_free != nullptr) {
      nvml_.api().event_set_free(events_);
    }
  }
  NvmlHealth(const NvmlHealth&) = delete;
  NvmlHealth& operator=(const NvmlHealth&) = delete;
  NvmlHealth(NvmlHealth&&) = delete;
  NvmlHealth& operator=(NvmlHealth&&) = delete;

  [[nodiscard]] std::string unavailable() const override { return why_; }

  [[nodiscard]] GpuHealth read() override {
    GpuHealth h;
    if (!why_.empty()) {
      return h;
    }
    read_pcie(h);  // first: the caller keeps the link busy while this reads, and the load is short
    read_ecc(h);
    read_retired_pages(h);
    read_remapped_rows(h);
    read_xid(h);
    read_nvlink(h);
    read_throttle(h);
    read_processes(h);
    return h;
  }

  [[nodiscard]] std::vector<std::pair<std::string, double>> throttle_ms() override {
    std::vector<std::pair<std::string, double>> out;
    if (!why_.empty()) {
      return out;
    }
    for (const auto& [figure, now] : throttle_ns()) {
      const auto base = baseline_ns_.find(figure);
      if (base != baseline_ns_.end()) {  // a counter that appears later has no start to count from
        out.emplace_back(figure, static_cast<double>(now >= base->second ? now - base->second : 0) / 1e6);
      }
    }
    return out;
  }

 private:
  [[nodiscard]] const NvmlApi& api() const { return nvml_.api(); }

  // Records `figure`; or, where this GPU does not give it (NOT_SUPPORTED; FUNCTION_NOT_FOUND, which stands
  // for an entry point this driver's library lacks), why it is not measured. Any other answer (GPU_IS_LOST,
  // NO_PERMISSION, UNKNOWN, ...) is an error of the reading: a GPU whose health cannot be read is not passed.
  void put(GpuHealth& h, const char* figure, nvmlReturn_t result, double value) const {
    if (result == NVML_ERROR_FUNCTION_NOT_FOUND) {
      h.not_measured.emplace_back(figure, "this driver's NVML lacks the query");
    } else if (result == NVML_ERROR_NOT_SUPPORTED) {
      h.not_measured.emplace_back(figure, fmt::format("NVML: {}", nvml_.error_text(result)));
    } else if (result != NVML_SUCCESS) {
      h.errors.push_back(fmt::format("{}: NVML: {}", figure, nvml_.error_text(result)));
    } else {
      h.figures.emplace_back(figure, value);
    }
  }

  void read_ecc(GpuHealth& h) const {
    const auto fn = api().device_get_total_ecc_errors;
    const auto one = [&](const char* figure, nvmlMemoryErrorType_t type, nvmlEccCounterType_t counter) {
      unsigned long long n = 0;
      const nvmlReturn_t r = fn == nullptr ? NVML_ERROR_FUNCTION_NOT_FOUND : fn(device_, type, counter, &n);
      put(h, figure, r, static_cast<double>(n));
    };
    one("ecc.volatile.uncorrected", NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC);
    one("ecc.volatile.corrected", NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC);
    one("ecc.aggregate.uncorrected", NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC);
    one("ecc.aggregate.corrected", NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC);
    // ECC switched off makes the counts NOT_SUPPORTED: the profile judges the mode itself.
    const auto mode = api().device_get_ecc_mode;
    nvmlEnableState_t current = NVML_FEATURE_DISABLED;
    nvmlEnableState_t pending = NVML_FEATURE_DISABLED;
    // The query first, then the value it wrote: a function's arguments are evaluated in no set order.
    const nvmlReturn_t ecc =
        mode == nullptr ? NVML_ERROR_FUNCTION_NOT_FOUND : mode(device_, &current, &pending);
    put(h, "ecc.enabled", ecc, current == NVML_FEATURE_ENABLED ? 1 : 0);
  }

  void read_retired_pages(GpuHealth& h) const {
    const auto fn = api().device_get_retired_pages;
    const auto one = [&](const char* figure, nvmlPageRetirementCause_t cause) {
      // A count of 0: NVML answers how many there are (INSUFFICIENT_SIZE when there are some); the buffer is
      // never written, but must not be null.
      unsigned count = 0;
      std::array<unsigned long long, 1> addresses{};
      nvmlReturn_t r =
          fn == nullptr ? NVML_ERROR_FUNCTION_NOT_FOUND : fn(device_, cause, &count, addresses.data());
      r = r == NVML_ERROR_INSUFFICIENT_SIZE ? NVML_SUCCESS : r;
      put(h, figure, r, count);
    };
    one("retired_pages.single_bit", NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS);
    one("retired_pages.double_bit", NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR);
    const auto pending = api().device_get_retired_pages_pending_status;
    nvmlEnableState_t state = NVML_FEATURE_DISABLED;
    const nvmlReturn_t r = pending == nullptr ? NVML_ERROR_FUNCTION_NOT_FOUND : pending(device_, &state);
    put(h, "retired_pages.pending", r, state == NVML_FEATURE_ENABLED ? 1 : 0);
  }

  void read_remapped_rows(GpuHealth& h) const {
    const auto fn = api().device_get_remapped_rows;
    unsigned correctable = 0;
    unsigned uncorrectable = 0;
    unsigned pending = 0;
    unsigned failed = 0;
    const nvmlReturn_t r = fn == nullptr ? NVML_ERROR_FUNCTION_NOT_FOUND
                                         : fn(device_, &correctable, &uncorrectable, &pending, &failed);
    put(h, "remapped_rows.correctable", r, correctable);
    put(h, "remapped_rows.uncorrectable", r, uncorrectable);
    put(h, "remapped_rows.pending", r, pending != 0 ? 1 : 0);
    put(h, "remapped_rows.failed", r, failed != 0 ? 1 : 0);
  }

  // Note [Other processes on the GPU]. NVML lists the processes that hold a context on the GPU. This one is
  // among them (its cases ran there); any other shares the GPU with the run, and what the run measured is
  // then not the GPU's alone. A co-tenant keeping every SM busy made an H100's acceptance run take 16 times
  // as long while every bandwidth check still passed (each repetition is short enough to run within one of
  // the time slices the two contexts take in turn), so the profiles judge this count. Where NVML lists no
  // process at all, not even this one (a container whose PID namespace hides them), it is not measured;
  // where this PID is not among those listed (another namespace's PIDs), one of them is taken to be this one.
  void read_processes(GpuHealth& h) const {
    constexpr const char* kFigure = "processes.others";
    const auto fn = api().device_get_compute_running_processes;
    std::vector<nvmlProcessInfo_t> infos(64);
    auto count = static_cast<unsigned>(infos.size());
    nvmlReturn_t r = fn == nullptr ? NVML_ERROR_FUNCTION_NOT_FOUND : fn(device_, &count, infos.data());
    if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
      infos.resize(count + 16);
      count = static_cast<unsigned>(infos.size());
      r = fn(device_, &count, infos.data());
    }
    if (r != NVML_SUCCESS) {
      put(h, kFigure, r, 0);
      return;
    }
    infos.resize(std::min<std::size_t>(count, infos.size()));
    if (infos.empty()) {
      h.not_measured.emplace_back(kFigure,
                                  "NVML lists no process on this GPU, not even this one (a PID "
                                  "namespace hides them)");
      return;
    }
    const auto self = static_cast<unsigned>(getpid());
    const bool listed = std::any_of(infos.begin(), infos.end(), [&](const auto& p) { return p.pid == self; });
    std::vector<std::string> notes;
    for (const nvmlProcessInfo_t& p : infos) {
      if (p.pid == self) {
        continue;
      }
      const std::string memory = p.usedGpuMemory == static_cast<unsigned long long>(NVML_VALUE_NOT_AVAILABLE)
                                     ? std::string("memory not given")
                                     : fmt::format("{} MiB", p.usedGpuMemory >> 20);
      notes.push_back(fmt::format("{}: process {}{} holds a context on this GPU ({})", kFigure, p.pid,
                                  listed ? "" : " (a PID of another namespace)", memory));
    }
    const std::size_t others = listed ? notes.size() : notes.size() - 1;
    h.figures.emplace_back(kFigure, static_cast<double>(others));
    if (others > 0) {
      h.notes.insert(h.notes.end(), notes.begin(), notes.end());
    }
  }

  void start_events() {
    const NvmlApi& a = api();
    if (a.event_set_create == nullptr || a.device_register_events == nullptr ||
        a.event_set_wait_v2 == nullptr || a.event_set_free == nullptr) {
      events_why_ = "this driver's NVML lacks event sets";
      return;
    }
    if (const nvmlReturn_t r = a.event_set_create(&events_); r != NVML_SUCCESS) {
      events_ = nullptr;
      events_why_ = fmt::format("NVML: {}", nvml_.error_text(r));
      return;
    }
    if (const nvmlReturn_t r = a.device_register_events(device_, nvmlEventTypeXidCriticalError, events_);
        r != NVML_SUCCESS) {
      events_why_ = fmt::format("NVML: {}", nvml_.error_text(r));
    }
  }

  void read_xid(GpuHealth& h) {
    if (!events_why_.empty()) {
      h.not_measured.emplace_back("xid.events", events_why_);
      return;
    }
    for (;;) {  // every event waiting, without blocking: TIMEOUT means none is left
      nvmlEventData_t data{};
      const nvmlReturn_t r = api().event_set_wait_v2(events_, &data, 0);
      if (r == NVML_ERROR_TIMEOUT) {
        break;
      }
      if (r != NVML_SUCCESS) {
        h.errors.push_back(fmt::format("xid.events: NVML: {}", nvml_.error_text(r)));
        return;
      }
      if ((data.eventType & nvmlEventTypeXidCriticalError) != 0) {
        xids_.push_back(data.eventData);
      }
    }
    for (const unsigned long long xid : xids_) {
      h.notes.push_back(xid_note(xid));
    }
    h.figures.emplace_back("xid.events", static_cast<double>(xids_.size()));
  }

  void read_pcie(GpuHealth& h) const {
    const auto get = [&](const char* figure, auto fn) -> std::optional<unsigned> {
      unsigned v = 0;
      const nvmlReturn_t r = fn == nullptr ? NVML_ERROR_FUNCTION_NOT_FOUND : fn(device_, &v);
      put(h, figure, r, v);
      return r == NVML_SUCCESS ? std::optional<unsigned>(v) : std::nullopt;
    };
    const std::optional<unsigned> gen = get("pcie.gen", api().device_get_curr_pcie_link_generation);
    const std::optional<unsigned> gen_max = get("pcie.gen_max", api().device_get_max_pcie_link_generation);
    const std::optional<unsigned> width = get("pcie.width", api().device_get_curr_pcie_link_width);
    const std::optional<unsigned> width_max = get("pcie.width_max", api().device_get_max_pcie_link_width);
    below(h, "pcie.gen_below_max", gen, gen_max);
    below(h, "pcie.width_below_max", width, width_max);
  }

  static void below(GpuHealth& h, const char* figure, std::optional<unsigned> now,
                    std::optional<unsigned> most) {
    if (now && most) {
      h.figures.emplace_back(figure, *most > *now ? *most - *now : 0);
    } else {
      h.not_measured.emplace_back(figure, "the link's current or maximum value is not measured");
    }
  }

  // The links NVML reports active, those it reports present but down, and the sums over the active links
  // of their data-link counters: lifetime counts, so a reading gives their change since the watch began.
  // Empty where no counter could be read.
  //
  // Note [NVLink errors that are errors]. `errors` sums replay, recovery and CRC-flit errors: a flit sent
  // again, a link retrained, a flit that failed its check (what `nvidia-smi nvlink -e` reports). DCGM's
  // limits fail a replay or recovery error outright, and CRC errors only at rates of 100 a second or more.
  // The data CRC and data ECC counts are kept apart (`corrected`, and `corrected_per_s` since the watch
  // began, summed over the links): on healthy H200s with NVLink 4 they rose by 39-54 and 83-168 per GPU in
  // one 256 MiB all_reduce job under mpirun while replay, recovery and CRC-flit stayed 0
  // (results/h200x4/faults-580.159.04/README.md), so counting them as errors failed every healthy node.
  // `corrected_per_s` is what DCGM's 100 a second would be judged against (summed over the links here, so
  // stricter than per link); the shipped profiles do not judge it yet, as no run of theirs has recorded it.
  // A link that goes down mid-run leaves the sums: its errors since the start are no longer counted.
  struct NvLinks {
    unsigned active = 0;
    unsigned down = 0;
    std::optional<unsigned long long> errors;
    std::optional<unsigned long long> corrected;
  };

  [[nodiscard]] NvLinks nvlinks() const {
    NvLinks out;
    const auto state = api().device_get_nvlink_state;
    const auto counter = api().device_get_nvlink_error_counter;
    for (unsigned link = 0; state != nullptr && link < NVML_NVLINK_MAX_LINKS; ++link) {
      nvmlEnableState_t on = NVML_FEATURE_DISABLED;
      if (state(device_, link, &on) != NVML_SUCCESS) {
        continue;  // no such link
      }
      if (on != NVML_FEATURE_ENABLED) {
        ++out.down;
        continue;
      }
      ++out.active;
      for (const nvmlNvLinkErrorCounter_t c :
           {NVML_NVLINK_ERROR_DL_REPLAY, NVML_NVLINK_ERROR_DL_RECOVERY, NVML_NVLINK_ERROR_DL_CRC_FLIT,
            NVML_NVLINK_ERROR_DL_CRC_DATA, NVML_NVLINK_ERROR_DL_ECC_DATA}) {
        unsigned long long n = 0;
        if (counter != nullptr && counter(device_, link, c, &n) == NVML_SUCCESS) {
          std::optional<unsigned long long>& sum =
              c == NVML_NVLINK_ERROR_DL_CRC_DATA || c == NVML_NVLINK_ERROR_DL_ECC_DATA ? out.corrected
                                                                                       : out.errors;
          sum = sum.value_or(0) + n;
        }
      }
    }
    return out;
  }

  void read_nvlink(GpuHealth& h) const {
    if (api().device_get_nvlink_state == nullptr) {
      h.not_measured.emplace_back("nvlink.active_links", "this driver's NVML lacks the query");
      h.not_measured.emplace_back("nvlink.links_down", "this driver's NVML lacks the query");
      h.not_measured.emplace_back("nvlink.errors", "this driver's NVML lacks the query");
      h.not_measured.emplace_back("nvlink.corrected", "this driver's NVML lacks the query");
      h.not_measured.emplace_back("nvlink.corrected_per_s", "this driver's NVML lacks the query");
      return;
    }
    const NvLinks now = nvlinks();
    h.figures.emplace_back("nvlink.active_links", now.active);
    h.figures.emplace_back("nvlink.links_down", now.down);
    if (now.active == 0) {
      h.not_measured.emplace_back("nvlink.errors", "no NVLink is active on this GPU");
    } else if (!now.errors || !nvlink_errors_at_start_) {
      h.not_measured.emplace_back("nvlink.errors", "NVML gave no error counter of the active links");
    } else {
      h.figures.emplace_back("nvlink.errors", since(*now.errors, *nvlink_errors_at_start_));
    }
    if (now.active != 0 && now.corrected && nvlink_corrected_at_start_) {
      const double corrected = since(*now.corrected, *nvlink_corrected_at_start_);
      const double seconds =
          std::max(1e-3, std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
      h.figures.emplace_back("nvlink.corrected", corrected);
      h.figures.emplace_back("nvlink.corrected_per_s", corrected / seconds);
    } else {
      const char* why = now.active == 0
                            ? "no NVLink is active on this GPU"
                            : "NVML gave no data CRC or ECC counter of the active links both at the "
                              "start of the run and now";
      h.not_measured.emplace_back("nvlink.corrected", why);
      h.not_measured.emplace_back("nvlink.corrected_per_s", why);
    }
  }

  static double since(unsigned long long now, unsigned long long start) {
    return static_cast<double>(now >= start ? now - start : 0);
  }

  // Each throttle counter this GPU gives (figure -> ns, cumulative since some point of the driver's).
  [[nodiscard]] std::map<std::string, unsigned long long> throttle_ns() const {
    std::map<std::string, unsigned long long> out;
    for (const Policy& p : kPolicies) {
      nvmlViolationTime_t t{};
      if (api().device_get_violation_status != nullptr &&
          api().device_get_violation_status(device_, p.type, &t) == NVML_SUCCESS) {
        out[p.figure] = t.violationTime;
      }
    }
    if (api().device_get_field_values != nullptr) {
      std::array<nvmlFieldValue_t, kFields.size()> values{};
      for (std::size_t i = 0; i < kFields.size(); ++i) {
        values[i].fieldId = kFields[i].id;
      }
      if (api().device_get_field_values(device_, static_cast<int>(values.size()), values.data()) ==
          NVML_SUCCESS) {
        for (std::size_t i = 0; i < kFields.size(); ++i) {
          if (values[i].nvmlReturn == NVML_SUCCESS &&
              values[i].valueType == NVML_VALUE_TYPE_UNSIGNED_LONG_LONG) {
            out[kFields[i].figure] = values[i].value.ullVal;
          }
        }
      }
    }
    return out;
  }

  void read_throttle(GpuHealth& h) {
    const std::vector<std::pair<std::string, double>> held = throttle_ms();
    const auto given = [&](const char* figure) {
      return std::find_if(held.begin(), held.end(), [&](const auto& f) { return f.first == figure; });
    };
    const auto one = [&](const char* figure, const char* why) {
      if (const auto it = given(figure); it != held.end()) {
        h.figures.emplace_back(figure, it->second);
      } else {
        h.not_measured.emplace_back(figure, why);
      }
    };
    for (const Policy& p : kPolicies) {
      one(p.figure, "NVML gives no violation counter for it here");
    }
    for (const Field& f : kFields) {
      one(f.figure, "NVML gives no field value for it here");
    }
    const auto fn = api().device_get_current_clocks_event_reasons;
    unsigned long long reasons = 0;
    const nvmlReturn_t r = fn == nullptr ? NVML_ERROR_FUNCTION_NOT_FOUND : fn(device_, &reasons);
    put(h, "clocks.hw_slowdown", r,
        (reasons & (kHwSlowdown | kHwThermalSlowdown | kHwPowerBrakeSlowdown)) != 0 ? 1 : 0);
    put(h, "clocks.sw_thermal_slowdown", r, (reasons & kSwThermalSlowdown) != 0 ? 1 : 0);
    if (r == NVML_SUCCESS) {
      h.notes.push_back(fmt::format("clock event reasons when read: {:#x}", reasons));
    }
  }

  NvmlLibrary nvml_;
  std::string why_;
  nvmlDevice_t device_{};
  nvmlEventSet_t events_ = nullptr;
  std::string events_why_;
  std::vector<unsigned long long> xids_;
  std::map<std::string, unsigned long long> baseline_ns_;
  std::optional<unsigned long long> nvlink_errors_at_start_;
  std::optional<unsigned long long> nvlink_corrected_at_start_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace

std::unique_ptr<HealthWatch> nvml_health_watch(const std::string& pci_bus_id, const std::string& uuid) {
  return std::make_unique<NvmlHealth>(pci_bus_id, uuid);
}

}  // namespace memstress
