#include "harness/run/workload.hpp"

#include <fmt/format.h>

#include <set>
#include <utility>

namespace memstress {

Workload::Workload(WorkloadDef def) : def_(std::move(def)) {
  const auto wrong = [&](std::string_view what) {
    return std::logic_error(fmt::format("workload '{}': {}", def_.name, what));
  };
  if (def_.name.empty() || def_.summary.empty() || !def_.prepare) {
    throw wrong("a definition needs a name, a summary and prepare");
  }
  std::set<std::string, std::less<>> axes;
  for (const ParamSpec& axis : def_.axes) {
    if (!axes.insert(axis.name).second) {
      throw wrong(fmt::format("two axes named '{}'", axis.name));
    }
  }
}

}  // namespace memstress
