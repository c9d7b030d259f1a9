#pragma once

// Note [Floors from the fleet]
// ============================
// `memstress accept --train` sets a check's golden value from one GPU, and the check then passes at
// 0.75 x that golden value: the floor is one GPU's luck times a constant. `memstress db train` sets it
// from a fleet instead: for each check of the profile that has a golden value (or awaits one), the
// store's rows of that workload, metric and `where`, on GPUs of the profile's model under one driver; each
// GPU's value is the median of its runs' medians, and the floor is
//     M - k x S     (higher is better; M + k x S, a ceiling, where lower is better)
// with M the median over the GPUs and S their scaled MAD (1.4826 x the median distance from M: sigma for
// a normal fleet, and like M blind to the few unhealthy GPUs a fleet holds). k is 3 unless given. S is at
// least 1% of M: a fleet that agrees to the last digit would otherwise fail its own next run. A check
// needs 5 GPUs at least (as `db outliers` judges groups); fewer leave it as it was, saying why. Rows that
// ran beside different numbers of other ranks (a collective over 2 GPUs is not the one over 4) are not
// mixed: the check takes the group of the most GPUs and says its ranks. The trained check gets `min`
// (or `max`) in place of its golden value, and `source`, which says where the bound came from; accept
// quotes it in every line of the check.

#include <cstddef>
#include <string>
#include <vector>

#include "harness/accept/profile.hpp"
#include "harness/accept/train.hpp"
#include "harness/db/outliers.hpp"
#include "harness/db/store.hpp"

namespace memstress::db {

struct FleetTrainOptions {
  double k = 3.0;
  std::string driver;       // "" the one driver the store holds for the model (InputError if several)
  std::string driver_what;  // what gave `driver` (the command's flag), named in the errors
  std::size_t min_gpus = OutlierOptions{}.min_gpus;         // 5, as db outliers judges groups
  double relative_floor = OutlierOptions{}.relative_floor;  // S at least 1% of M, as db outliers has it
};

struct FleetBound {
  std::string check;
  std::size_t gpus = 0;
  int ranks = 1;
  double median = 0;
  double spread = 0;  // S, after the 1% floor
  double bound = 0;
  bool at_least = true;
};

struct FleetTraining {
  std::string driver;
  std::vector<FleetBound> trained;
  std::vector<Untrained> untrained;
};

// Trains `profile` from `observations` (Store::observations of every metric). Throws InputError when
// the store holds no observation of the profile's GPU model, when it holds several drivers for it and
// options.driver is empty, or when options.driver is not among them (each message lists the drivers).
[[nodiscard]] FleetTraining train_from_fleet(Profile& profile,
                                             const std::vector<MetricObservation>& observations,
                                             const FleetTrainOptions& options);

}  // namespace memstress::db
