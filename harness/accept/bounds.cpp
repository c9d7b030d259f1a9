#include "harness/accept/bounds.hpp"

#include <fmt/format.h>

#include <cmath>

namespace memstress {
namespace {

// Why an absolute bound (`min` or `max`) means nothing; nullopt where it means something.
std::optional<std::string> absolute_problem(const char* key, double value) {
  if (value < 0) {
    return fmt::format("{} must be 0 or more (no figure a check judges is below 0), not {}", key, value);
  }
  if (value != 0 && !std::isnormal(value)) {
    return fmt::format("{} must be 0 or a normal number, not {}", key, value);
  }
  if (value > kMaxBound) {
    return fmt::format("{} must be at most {}, not {}", key, kMaxBound, value);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> golden_problem(double golden) {
  if (!(golden > 0)) {
    return fmt::format("golden must be a number above 0, not {}", golden);
  }
  if (!std::isnormal(golden) || golden < kMinGolden || golden > kMaxGolden) {
    return fmt::format("golden must be a number from {} to {}, not {}", kMinGolden, kMaxGolden, golden);
  }
  return std::nullopt;
}

std::optional<BoundProblem> bound_problem(const AcceptCheck& check) {
  if (check.golden) {
    if (std::optional<std::string> why = golden_problem(*check.golden)) {
      return BoundProblem{"golden", *why, fmt::format(" (train it: {})", check.train)};
    }
  }
  if (!(check.factor >= kMinFactor && check.factor <= 1)) {
    return BoundProblem{"factor",
                        fmt::format("factor must be in [{}, 1] (the share of golden that passes), not {}",
                                    kMinFactor, check.factor)};
  }
  if (check.min) {
    if (std::optional<std::string> why = absolute_problem("min", *check.min)) {
      return BoundProblem{"min", *why};
    }
  }
  if (check.max) {
    if (std::optional<std::string> why = absolute_problem("max", *check.max)) {
      return BoundProblem{"max", *why};
    }
  }
  if (check.min && check.max && *check.min > *check.max) {
    return BoundProblem{"min",
                        fmt::format("min {} is above max {}: nothing could pass", *check.min, *check.max)};
  }
  return std::nullopt;
}

}  // namespace memstress
