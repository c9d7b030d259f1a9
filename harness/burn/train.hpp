#pragma once

// A burn profile trained on healthy burns (`memstress burn --train --from FILE... --write OUT`).
//
// Note [Training a burn's bounds]. Each GPU's steady median of a throughput metric is the median of its
// intervals after the warm-up. The golden value of the metric is the median of those steady medians over
// every GPU and burn (the factor stays the base profile's, 0.85 unless it says otherwise). The drift bound is
// twice the deepest drop of one healthy interval below its GPU's steady median, over every metric, and at
// least kMinDriftPct (a bound tighter than the noise of a few healthy burns would fail the next); the lag
// bound is the same from each interval's drop below its node's median, where a node had two GPUs or more, and
// is left as it was otherwise. Bounds are rounded up to whole percents. Every row must be a passed burn
// interval of the profile's GPU model: training on a failed or aborted burn would teach the fault.

#include <string>
#include <string_view>
#include <vector>

#include "harness/burn/profile.hpp"
#include "harness/results/read.hpp"

namespace memstress {

inline constexpr double kMinDriftPct = 5;

struct BurnTraining {
  BurnProfile profile;             // the base with golden values and bounds trained
  std::vector<std::string> lines;  // what was measured, a line per metric and bound
};

// Throws InputError (naming the file, and `what`: the command's flag that gave the burns) for results that
// are not a complete healthy burn of base.gpu (when it names one): no burn interval past the warm-up, a
// failed or errored row, a run not complete, another model.
[[nodiscard]] BurnTraining train_burn(const BurnProfile& base, const std::vector<Results>& burns,
                                      std::string_view what);

// The profile as YAML that load_burn_profile reads back, `comment` (lines) at its top.
[[nodiscard]] std::string burn_profile_yaml(const BurnProfile& profile,
                                            const std::vector<std::string>& comment);

}  // namespace memstress
