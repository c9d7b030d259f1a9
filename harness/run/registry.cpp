#include "harness/run/registry.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

#include "harness/core/error.hpp"

namespace memstress {

void Registry::add(WorkloadDef def) {
  auto workload = std::make_unique<Workload>(std::move(def));
  if (find(workload->name()) != nullptr) {
    throw std::logic_error(fmt::format("workload '{}' registered twice", workload->name()));
  }
  workloads_.push_back(std::move(workload));
}

const Workload* Registry::find(std::string_view name) const noexcept {
  for (const auto& w : workloads_) {
    if (w->name() == name) {
      return w.get();
    }
  }
  return nullptr;
}

const Workload& Registry::get(std::string_view name) const {
  if (const Workload* w = find(name)) {
    return *w;
  }
  std::string known;
  for (const auto& w : workloads_) {
    known += known.empty() ? "" : ", ";
    known += w->name();
  }
  throw InputError(
      fmt::format("unknown workload '{}'; known workloads: {} (see `memstress list`)", name, known));
}

}  // namespace memstress
