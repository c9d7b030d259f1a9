#pragma once

// A profile trained on a run's rows (`memstress accept --train`): each check's golden value set to what the
// rows measured (Note [Judging a check] in judge.hpp says how it is then judged).

#include <string>
#include <vector>

#include "harness/accept/measure.hpp"
#include "harness/accept/profile.hpp"

namespace memstress {

// A check train() left as it was, and why.
struct Untrained {
  std::string check;
  std::string why;  // "no matching row in these results", "measured 0: golden must be a number above 0, ..."
};

// Sets every check's golden value to what `rows` measured (checks with no golden value and only absolute
// bounds are left alone). Returns the checks that matched no row, or measured a value that cannot be a
// golden value (Note [Bounds that mean something]: the profile would not load again): they keep what they
// had.
[[nodiscard]] std::vector<Untrained> train(Profile& profile, const AcceptRows& rows);

}  // namespace memstress
