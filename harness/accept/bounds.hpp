#pragma once

// Note [Bounds that mean something]
// =================================
// A threshold that cannot be what anyone meant is refused when the profile is read (exit 2, one line naming
// the file, the check and the key), never judged:
// - `golden` must be a number from kMinGolden to kMaxGolden: 0 or less passes every higher-is-better figure
//   and none lower-is-better, and a subnormal one (1e-320) is 0 in all but name (0.75 x it is 0);
// - `factor` must be from kMinFactor to 1: 0.75 x golden is DCGM's rule, 1e-300 x golden passes anything;
// - `min` and `max` must be from 0 to kMaxBound, and not subnormal: no figure a check judges is negative
//   (rates, sizes, counts, ratios), so a negative `min` passes every value and a negative `max` none, and a
//   `max` of 1e300 is no bound at all;
// - `min` may not be above `max` (nothing could pass).
// Non-finite numbers are refused as they are read (profile.cpp). `--train` is held to the golden range too:
// a trained profile reads back (train.hpp).

#include <optional>
#include <string>

#include "harness/accept/profile.hpp"

namespace memstress {

inline constexpr double kMinGolden = 1e-9;
inline constexpr double kMaxGolden = 1e18;
inline constexpr double kMinFactor = 0.01;
inline constexpr double kMaxBound = 1e18;

// What is wrong with a check's bounds: the key to name (its line), why ("golden must be ..."), and what to do
// (" (train it: " and the check's `train`, or "").
struct BoundProblem {
  const char* key;
  std::string why;
  std::string hint = {};
};

// Why `golden` cannot be a golden value; nullopt where it can.
[[nodiscard]] std::optional<std::string> golden_problem(double golden);
// The first problem of `check`'s bounds, in the order of the note; nullopt where they mean something.
[[nodiscard]] std::optional<BoundProblem> bound_problem(const AcceptCheck& check);

}  // namespace memstress
