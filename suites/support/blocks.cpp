#include "suites/support/blocks.hpp"

#include <cstdio>

namespace memstress::suites::detail {

void report_free_failure(const char* what) noexcept {
  std::fprintf(stderr, "memstress: freeing a block failed: %s\n", what);
}

}  // namespace memstress::suites::detail
