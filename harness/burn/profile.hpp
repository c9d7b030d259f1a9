#pragma once

// A burn profile (`memstress burn --profile h100-burn`): how long to burn, how often to write a row, how much
// of the GPU's free memory the stress covers, and the bounds each interval is judged by, in YAML:
//
//   name: h100-burn
//   gpu: NVIDIA H100 80GB HBM3        # the model the golden values are for
//   duration: 15m                     # 1s .. 7d; `burn --duration` overrides it
//   interval: 60                      # seconds between rows: at most 60
//   memory: 0.9                       # share of the free memory the pattern stress fills and checks
//   drift_pct: 10                     # an interval this much below the GPU's own steady state FAILs
//   lag_pct: 10                       # a GPU this much below its node's median in an interval FAILs
//   allowed_clock_reasons: [idle, applications_clocks, sw_power_cap, sync_boost]
//   golden:                           # per metric, trained from healthy burns: FAIL below factor x golden
//     memory.GB/s: {golden: 2650, factor: 0.85}
//
// Note [Judging a burn] in judge.hpp says how the bounds are used.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memstress {

struct BurnGolden {
  std::string metric;  // "memory.GB/s", "gemm.bf16.TFLOP/s"
  double golden = 0;
  double factor = 0.85;
};

struct BurnProfile {
  std::string name;
  std::string gpu;  // empty: any model (a profile of bounds only)
  double duration_s = 15 * 60;
  double interval_s = 60;
  double memory_share = 0.9;
  double drift_pct = 10;
  double lag_pct = 10;
  // NVML clock event reasons that do not fail a burn (telemetry.hpp's names); every other one does.
  std::uint64_t allowed_clock_reasons = 0;
  std::vector<std::string> allowed_clock_reason_names;
  std::vector<BurnGolden> golden;
  // The first intervals are the warm-up: clocks and temperatures settle; drift is judged against the
  // steady state after them.
  int warmup_intervals = 1;
};

// The defaults above, for a burn without --profile: no golden values, any GPU model.
[[nodiscard]] BurnProfile default_burn_profile();
// Throws InputError naming the profile (`name`: how the caller names it, the command's flag and the file) and
// the key for anything that is not a valid burn profile.
[[nodiscard]] BurnProfile parse_burn_profile(const std::string& yaml, const std::string& name);
// The file at `path`, given by `what` (the command's flag), named in the errors with it.
[[nodiscard]] BurnProfile load_burn_profile(const std::filesystem::path& path, std::string_view what);

}  // namespace memstress
