#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/run/params.hpp"

namespace memstress {

class Registry;
class Workload;

struct PlannedCase {
  const Workload* workload = nullptr;
  ParamSet params;
  // With several ranks: one rank of each node at a time instead of all at once (see Runner). Not for a
  // workload whose ranks work together (Requirements::all_ranks).
  bool in_turn = false;
};

// The most cases a plan may have unless the request says otherwise (`memstress run --max-cases`): a typo in
// an axis (a step of 1 byte) should not start a run of a million cases, nor take the memory to list them.
// The largest shipped job (--full) has a few hundred.
inline constexpr std::size_t kDefaultMaxCases = 10'000;

// The request's inputs as the command names them in the plan's errors (`memstress run`: -p, -b/-e/-f,
// --in-turn, --max-cases): given by the command, which knows how it spells its flags.
struct PlanInputNames {
  std::string overrides{};
  std::string sizes{};
  std::string in_turn{};
  std::string max_cases{};
};

struct PlanRequest {
  std::vector<std::string> workloads;               // empty: the default job
  std::vector<ParamOverride> overrides;             // -p
  std::optional<std::vector<std::uint64_t>> sizes;  // -b/-e/-f: replaces the `bytes` axis
  bool full = false;                                // --full: the long axis values
  std::vector<std::string> in_turn;                 // --in-turn: one rank of each node at a time
  std::size_t max_cases = kDefaultMaxCases;         // --max-cases
  PlanInputNames names{};                           // of the above, in the errors
};

// Expands the selected workloads into cases (the Cartesian product of their axes, in declaration order).
// Everything is validated first: an unknown workload, an axis no selected workload has, a value of the
// wrong type, -b/-e/-f with no `bytes` axis, or an --in-turn workload that is not selected or whose ranks
// work together, or a case whose values do not go together (Workload::validate: sizes' min_bytes above its
// max_bytes) throws InputError before any case runs. So does a plan whose axes make more than
// request.max_cases combinations, before they are listed.
std::vector<PlannedCase> plan_cases(const Registry& registry, const PlanRequest& request);

}  // namespace memstress
