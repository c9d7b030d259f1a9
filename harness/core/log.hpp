#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <utility>

#include "harness/core/launcher.hpp"

namespace memstress {

// Notes and progress go to stderr so that stdout stays parseable (tables, JSON, CSV). In a job of
// several ranks, the notes of ranks other than 0 say which rank wrote them. What stdout holds so far is
// written first: with both sent to one file (`>log 2>&1`), a note never lands in the middle of a line.
template <typename... Args>
void note(fmt::format_string<Args...> format, Args&&... args) {
  std::fflush(stdout);
  fmt::print(stderr, "{}{}\n", note_prefix(), fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace memstress
