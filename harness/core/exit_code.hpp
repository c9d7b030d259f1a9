#pragma once

namespace memstress {

// Process exit codes, the same for every subcommand (docs/run.md lists them).
enum class ExitCode : int {
  ok = 0,
  check_failed = 1,  // a data error, a threshold, a regression
  bad_input = 2,     // bad usage, flags, configs, traces, result files
  env_missing = 3,   // e.g. a GPU was required and none was found
};

constexpr int to_int(ExitCode code) noexcept {
  return static_cast<int>(code);
}

}  // namespace memstress
