#pragma once

// A fault injected on purpose, for the tests of the distributed harness (run --inject-fault
// RANK:CASE_INDEX:exit|hang|throw): on rank RANK, when the CASE_INDEX-th case (0-based, in plan order,
// under each allocator) starts to run (a skipped case injects nothing), the process exits (std::_Exit(1), as
// a crash would), hangs (sleeps forever) or throws (an ordinary failing case: an error row). Part of
// RunOptions, never a global.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace memstress {

struct FaultInjection {
  enum class Kind { exit, hang, raise };
  int rank = 0;
  std::size_t case_index = 0;
  Kind kind = Kind::raise;
  std::string what;  // the command's flag that asked for it, which its notes and its error name

  // "1:2:hang". Throws InputError naming `what` on anything else.
  static FaultInjection parse(std::string_view text, std::string_view what);
};

// Injects `fault` if it is for this rank and case: may not return (exit, hang) or throw (raise).
void maybe_inject(const std::optional<FaultInjection>& fault, int rank, std::size_t case_index);

}  // namespace memstress
