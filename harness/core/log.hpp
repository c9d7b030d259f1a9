#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <utility>

namespace memstress {

// Notes and progress go to stderr so that stdout stays parseable (tables, JSON, CSV).
template <typename... Args>
void note(fmt::format_string<Args...> format, Args&&... args) {
  fmt::print(stderr, "memstress: {}\n", fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace memstress
