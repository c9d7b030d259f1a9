#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "harness/run/workload.hpp"

namespace memstress {

// The workloads this binary knows, in registration order. Built once at start-up (suites/registry.cpp
// adds the built-in ones, Note [A workload in one place]) and read-only afterwards.
class Registry {
 public:
  // Throws std::logic_error on a duplicate name or a definition Workload refuses (programming errors,
  // caught by the tests).
  void add(WorkloadDef def);
  [[nodiscard]] const Workload* find(std::string_view name) const noexcept;
  // Throws InputError listing the known names.
  [[nodiscard]] const Workload& get(std::string_view name) const;
  [[nodiscard]] const std::vector<std::unique_ptr<Workload>>& all() const noexcept { return workloads_; }

 private:
  std::vector<std::unique_ptr<Workload>> workloads_;
};

}  // namespace memstress
