#include "harness/accept/train.hpp"

#include <fmt/format.h>

#include <optional>

#include "harness/accept/bounds.hpp"

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
    } else if (const std::optional<std::string> why = golden_problem(m->value)) {
      // Note [Bounds that mean something]: the trained profile must read back.
      untrained.push_back(
          {check.name, fmt::format("measured {}: {} (give the check a min or max instead)", m->value, *why)});
    } else {
      check.golden = m->value;
    }
  }
  return untrained;
}

}  // namespace memstress
