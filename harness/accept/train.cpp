#include "harness/accept/train.hpp"

#include <fmt/format.h>

#include <cmath>
#include <optional>

namespace memstress {

std::vector<Untrained> train(Profile& profile, const AcceptRows& rows) {
  std::vector<Untrained> untrained;
  for (AcceptCheck& check : profile.checks) {
    if (!check.golden && (check.min || check.max || check.spread)) {
      continue;
    }
    const std::optional<Measured> m = measure(check, rows);
    if (!m) {
      untrained.push_back({check.name, "no matching row in these results"});
    } else if (!(m->value > 0) || !std::isfinite(m->value)) {
      untrained.push_back({check.name, fmt::format("measured {}: a golden value must be above 0 (give the "
                                                   "check a min or max instead)",
                                                   m->value)});
    } else {
      check.golden = m->value;
    }
  }
  return untrained;
}

}  // namespace memstress
