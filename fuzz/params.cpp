// `memstress run`'s plan from its command line: `-p [WORKLOAD.]NAME=V1,V2` (ParamOverride::parse),
// -b/-e/-f/-i (parse_bytes, size_sweep) and the plan they make (plan_cases, harness/run/plan.hpp), which
// validates every value and puts it in canonical form, so that "64M" and "67108864" are one case.
//
// The built-in registry needs the suites and their CUDA code, so the plan is made against stand-ins with the
// workloads' own axes (fuzz/plan_registry.hpp). The input is one argument a line, as `memstress run` would be
// given them:
//   -p TEXT    an override          +NAME    a selected workload      ~NAME   --in-turn NAME
//   -b/-e/-i SIZE, -f FACTOR        --full
// Promises checked: a canonical value is its own canonical form and, for sizes, the same size; the sizes
// of -b/-e/-f are planned as they are (where no -p names the `bytes` axis).

#include <algorithm>
#include <charconv>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/flag_names.hpp"
#include "fuzz/fuzz_target.hpp"
#include "fuzz/plan_registry.hpp"
#include "harness/core/units.hpp"
#include "harness/run/plan.hpp"
#include "harness/run/registry.hpp"
#include "harness/run/workload.hpp"

namespace {

using namespace memstress;

// The sweep's inputs named as `memstress run` names them (apps/flag_names.hpp).
const SizeSweepNames kSweepFlags = app::run_sweep_names();

std::string_view after(std::string_view line, std::string_view prefix) {
  return line.substr(prefix.size());
}

void check_canonical(const Registry& registry, const PlanRequest& request,
                     const std::vector<PlannedCase>& cases) {
  const bool swept =
      request.sizes && std::none_of(request.overrides.begin(), request.overrides.end(),
                                    [](const ParamOverride& o) { return o.name == kSizeAxis; });
  for (const PlannedCase& c : cases) {
    if (swept) {
      for (const std::pair<std::string, std::string>& kv : c.params.values()) {
        if (kv.first == kSizeAxis) {
          const std::uint64_t planned = parse_bytes(kv.second, "planned");
          fuzz::check(
              std::find(request.sizes->begin(), request.sizes->end(), planned) != request.sizes->end(),
              "a size of -b/-e/-f is planned as another size", kv.second.c_str());
        }
      }
    }
    const std::vector<ParamSpec>& specs = c.workload->params();
    for (const std::pair<std::string, std::string>& kv : c.params.values()) {
      const std::string& value = kv.second;  // (clang 14 cannot capture a structured binding)
      const auto spec =
          std::find_if(specs.begin(), specs.end(), [&](const ParamSpec& s) { return s.name == kv.first; });
      fuzz::check(spec != specs.end(), "a planned value of no axis", kv.first.c_str());
      const std::string again = fuzz::must("a canonical value is refused by its own axis",
                                           [&] { return spec->canonical(value, "again"); });
      fuzz::check(again == value, "a canonical value is not its own canonical form", value.c_str());
      if (spec->type == ParamType::bytes) {
        fuzz::check(parse_bytes(again, "again") == parse_bytes(value, "value"),
                    "a canonical size is another size");
      }
    }
    static_cast<void>(registry.get(c.workload->name()));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Registry registry = fuzz::plan_registry();  // read-only, as the real one
  std::string_view input = fuzz::text(data, size);
  return fuzz::run([&] {
    PlanRequest request;
    request.names = app::run_plan_names();
    std::optional<std::string_view> minbytes, maxbytes, stepbytes;
    double factor = 2.0;
    while (!input.empty()) {
      const std::size_t end = std::min(input.find('\n'), input.size());
      const std::string_view line = input.substr(0, end);
      input.remove_prefix(std::min(end + 1, input.size()));
      if (line.starts_with("-p ")) {
        request.overrides.push_back(ParamOverride::parse(after(line, "-p "), "-p"));
      } else if (line.starts_with("+")) {
        request.workloads.emplace_back(after(line, "+"));
      } else if (line.starts_with("~")) {
        request.in_turn.emplace_back(after(line, "~"));
      } else if (line == "--full") {
        request.full = true;
      } else if (line.starts_with("-b ")) {
        minbytes = after(line, "-b ");
      } else if (line.starts_with("-e ")) {
        maxbytes = after(line, "-e ");
      } else if (line.starts_with("-i ")) {
        stepbytes = after(line, "-i ");
      } else if (line.starts_with("-f ")) {
        const std::string_view f = after(line, "-f ");
        if (std::from_chars(f.data(), f.data() + f.size(), factor).ec != std::errc{}) {
          return;  // CLI11 refuses it before memstress sees it
        }
      }
    }
    if (minbytes && maxbytes) {
      const std::uint64_t increment = stepbytes ? parse_bytes(*stepbytes, "-i/--stepbytes") : 0;
      request.sizes =
          size_sweep(parse_bytes(*minbytes, "-b/--minbytes"), parse_bytes(*maxbytes, "-e/--maxbytes"), factor,
                     increment, kSweepFlags, request.max_cases);
    }
    check_canonical(registry, request, plan_cases(registry, request));
  });
}
