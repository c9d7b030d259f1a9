#include "harness/run/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <set>

#include "harness/core/error.hpp"
#include "harness/core/units.hpp"
#include "harness/run/registry.hpp"
#include "harness/run/workload.hpp"

namespace memstress {
namespace {

std::vector<const Workload*> select(const Registry& registry, const std::vector<std::string>& names) {
  std::vector<const Workload*> selected;
  if (names.empty()) {
    for (const auto& w : registry.all()) {
      if (w->in_default_job()) {
        selected.push_back(w.get());
      }
    }
    return selected;
  }
  for (const std::string& name : names) {
    const Workload* w = &registry.get(name);
    if (std::find(selected.begin(), selected.end(), w) == selected.end()) {
      selected.push_back(w);
    }
  }
  return selected;
}

void check_overrides_apply(const std::vector<const Workload*>& selected, const PlanRequest& request) {
  for (const ParamOverride& o : request.overrides) {
    bool applies = false;
    for (const Workload* w : selected) {
      if (!o.workload.empty() && o.workload != w->name()) {
        continue;
      }
      const auto specs = w->params();
      applies = applies ||
                std::any_of(specs.begin(), specs.end(), [&](const ParamSpec& s) { return s.name == o.name; });
    }
    if (!applies) {
      throw InputError(
          o.workload.empty()
              ? fmt::format("{} {}: no selected workload has a parameter '{}' (see `memstress list`)",
                            request.names.overrides, o.name, o.name)
              : fmt::format("{} {}.{}: workload '{}' is not selected or has no parameter '{}'",
                            request.names.overrides, o.workload, o.name, o.workload, o.name));
    }
  }
  if (request.sizes) {
    const bool any = std::any_of(selected.begin(), selected.end(), [](const Workload* w) {
      const auto& specs = w->params();
      return std::any_of(specs.begin(), specs.end(), [](const ParamSpec& s) { return s.name == kSizeAxis; });
    });
    if (!any) {
      throw InputError(
          fmt::format("{}: no selected workload has a 'bytes' axis to sweep", request.names.sizes));
    }
  }
}

// The values of one axis for one workload, canonical.
std::vector<std::string> axis_values(const Workload& w, const ParamSpec& spec, const PlanRequest& request) {
  std::vector<std::string> raw =
      request.full && !spec.full_defaults.empty() ? spec.full_defaults : spec.defaults;
  // Who gave the values, for messages: -b/-e/-f or -p (the defaults are valid).
  std::string what = fmt::format("{} {}.{}", request.names.overrides, w.name(), spec.name);
  if (spec.name == kSizeAxis && request.sizes) {
    raw.clear();
    for (const std::uint64_t size : *request.sizes) {
      raw.push_back(exact_bytes(size));
    }
    what = fmt::format("{} (the sizes of {}.{})", request.names.sizes, w.name(), spec.name);
  }
  // A scoped override (-p smoke.bytes=…) wins over an unscoped one (-p bytes=…); the last of each wins.
  const ParamOverride* chosen = nullptr;
  for (const ParamOverride& o : request.overrides) {
    if (o.name != spec.name) {
      continue;
    }
    if (o.workload == w.name() || (o.workload.empty() && (chosen == nullptr || chosen->workload.empty()))) {
      chosen = &o;
    }
  }
  if (chosen != nullptr) {
    raw = chosen->values;
    what = fmt::format("{} {}.{}", request.names.overrides, w.name(), spec.name);
  }
  // In their order, each once (a set, not a search of the list: a -b/-e/-i sweep has thousands).
  std::vector<std::string> values;
  std::set<std::string, std::less<>> seen;
  for (const std::string& v : raw) {
    std::string c = spec.canonical(v, what);
    if (seen.insert(c).second) {
      values.push_back(std::move(c));
    }
  }
  return values;
}

// One workload's axes, each with its canonical values.
using Axes = std::vector<std::pair<std::string, std::vector<std::string>>>;

// The axes of every selected workload. Refuses a plan of more than request.max_cases combinations (before
// those that do not apply are left out) while it is still a list of axes: their product can be far beyond
// memory (five axes of a hundred values are 10^10 cases).
std::vector<Axes> plan_axes(const std::vector<const Workload*>& selected, const PlanRequest& request) {
  std::vector<Axes> axes;
  std::size_t combinations = 0;  // up to max_cases + 1: beyond that the plan is refused anyway
  const std::size_t cap = request.max_cases == std::numeric_limits<std::size_t>::max()
                              ? request.max_cases
                              : request.max_cases + 1;
  for (const Workload* w : selected) {
    Axes& mine = axes.emplace_back();
    std::size_t product = 1;
    for (const ParamSpec& spec : w->params()) {
      std::vector<std::string> values = axis_values(*w, spec, request);
      product =
          values.empty() ? 0 : (product > cap / values.size() ? cap : std::min(cap, product * values.size()));
      mine.emplace_back(spec.name, std::move(values));
    }
    combinations = std::min(cap, combinations + product);
  }
  if (combinations > request.max_cases) {
    throw InputError(fmt::format(
        "the plan has more than {} {} cases (workloads x axis values); narrow the axes, or raise {} "
        "if you mean it",
        request.names.max_cases, request.max_cases, request.names.max_cases));
  }
  return axes;
}

// --in-turn names selected workloads whose ranks can work alone.
void check_in_turn(const std::vector<const Workload*>& selected, const PlanRequest& request) {
  for (const std::string& name : request.in_turn) {
    const auto w =
        std::find_if(selected.begin(), selected.end(), [&](const Workload* s) { return s->name() == name; });
    if (w == selected.end()) {
      throw InputError(fmt::format("{} {}: not a workload this run selects", request.names.in_turn, name));
    }
    if ((*w)->requirements().all_ranks) {
      throw InputError(fmt::format("{} {}: its ranks work together (NCCL), so they cannot run one at a time",
                                   request.names.in_turn, name));
    }
  }
}

}  // namespace

std::vector<PlannedCase> plan_cases(const Registry& registry, const PlanRequest& request) {
  const std::vector<const Workload*> selected = select(registry, request.workloads);
  check_overrides_apply(selected, request);
  check_in_turn(selected, request);
  const std::vector<Axes> axes = plan_axes(selected, request);
  std::vector<PlannedCase> cases;
  for (std::size_t i = 0; i < selected.size(); ++i) {
    const Workload* w = selected[i];
    std::vector<std::vector<std::pair<std::string, std::string>>> partial{{}};
    for (const auto& [name, axis] : axes[i]) {
      std::vector<std::vector<std::pair<std::string, std::string>>> next;
      for (const auto& prefix : partial) {
        for (const std::string& value : axis) {
          auto extended = prefix;
          extended.emplace_back(name, value);
          next.push_back(std::move(extended));
        }
      }
      partial = std::move(next);
    }
    const std::size_t before = cases.size();
    for (auto& values : partial) {
      ParamSet params(std::move(values));
      if (w->applies(params)) {
        try {
          w->validate(params);
        } catch (const InputError& e) {
          throw InputError(fmt::format("{} {}: {}", request.names.overrides, w->name(), e.what()));
        }
        const bool in_turn =
            std::find(request.in_turn.begin(), request.in_turn.end(), w->name()) != request.in_turn.end();
        cases.push_back(PlannedCase{w, std::move(params), in_turn});
      }
    }
    if (cases.size() == before && !partial.empty()) {
      // Every combination was left out (e.g. collectives' timing=events with iters=50): say so, not an
      // empty plan that runs nothing.
      throw InputError(
          fmt::format("{} {}: none of the combinations of the values given is a case of {} (each is left "
                      "out as meaningless; see `memstress list {}` for which axes go together)",
                      request.names.overrides, w->name(), w->name(), w->name()));
    }
  }
  return cases;
}

}  // namespace memstress
