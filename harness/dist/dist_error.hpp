#pragma once

#include <string>

#include "harness/core/error.hpp"

namespace memstress {

// A peer rank failed or hangs, or a collective did not finish in time. Exit code 1. The message names
// the rank (and, once the runner has added it, the case).
class DistError : public Error {
 public:
  explicit DistError(const std::string& what) : Error(ExitCode::check_failed, what) {}
};

}  // namespace memstress
