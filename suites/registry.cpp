#include "suites/registry.hpp"

namespace memstress::suites {

Registry builtin_registry() {
  Registry registry;
  for (const auto define : kWorkloads) {
    registry.add(define());
  }
  return registry;
}

}  // namespace memstress::suites
