// `memstress run`'s plan from its command line: `-p [WORKLOAD.]NAME=V1,V2` (ParamOverride::parse),
// -b/-e/-f/-i (parse_bytes, size_sweep) and the plan they make (plan_cases, harness/run/plan.hpp), which
// validates every value and puts it in canonical form, so that "64M" and "67108864" are one case.
//
// The built-in registry needs the suites and their CUDA code, so the plan is made against a registry of
// stand-in workloads whose axes have every type and the bounds the suites use. The input is one argument
// a line, as `memstress run` would be given them:
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
#include "harness/core/units.hpp"
#include "harness/run/plan.hpp"
#include "harness/run/registry.hpp"
#include "harness/run/workload.hpp"

namespace {

using namespace memstress;

// The sweep's inputs named as `memstress run` names them (apps/flag_names.hpp).
const SizeSweepNames kSweepFlags = app::run_sweep_names();

// As transfers: pageable host memory means nothing for a device-to-device copy.
bool applies(const ParamSet& params) {
  for (const auto& [key, value] : params.values()) {
    if (key == "host" && value == "pageable") {
      return std::none_of(params.values().begin(), params.values().end(),
                          [](const auto& kv) { return kv.first == "direction" && kv.second == "d2d"; });
    }
  }
  return true;
}

WorkloadDef stand_in(std::string name, std::vector<ParamSpec> axes, bool all_ranks, bool in_default_job) {
  return {.name = std::move(name),
          .summary = "stand-in",
          .needs = {.all_ranks = all_ranks},
          .axes = std::move(axes),
          .in_default_job = in_default_job,
          .applies = applies,
          .prepare = [](CaseContext& /*ctx*/) -> std::unique_ptr<CaseRun> { return nullptr; }};
}

// Axes as the suites declare them (suites/*.cpp): every type, with and without bounds and --full values.
Registry stand_in_registry() {
  Registry r;
  r.add(stand_in("alloc-smoke",
                 std::vector<ParamSpec>{{.name = "bytes",
                                         .type = ParamType::bytes,
                                         .defaults = {"1M", "64M", "1G"},
                                         .full_defaults = {"512", "1M", "64M", "1G"},
                                         .minimum = 1,
                                         .help = "buffer size"},
                                        {.name = "count",
                                         .type = ParamType::integer,
                                         .defaults = {"16"},
                                         .full_defaults = {"16", "64"},
                                         .minimum = 1,
                                         .help = "buffers live at once"}},
                 false, true));
  r.add(stand_in("transfers",
                 std::vector<ParamSpec>{{.name = "direction",
                                         .type = ParamType::choice,
                                         .defaults = {"h2d", "d2h"},
                                         .choices = {"h2d", "d2h", "d2d"},
                                         .help = "copy direction"},
                                        {.name = "host",
                                         .type = ParamType::choice,
                                         .defaults = {"pinned"},
                                         .full_defaults = {"pinned", "pageable"},
                                         .choices = {"pinned", "pageable"},
                                         .help = "host memory"},
                                        {.name = "bytes",
                                         .type = ParamType::bytes,
                                         .defaults = {"256M"},
                                         .full_defaults = {"16M", "256M", "1G"},
                                         .minimum = 16,
                                         .help = "copy size"},
                                        {.name = "overlap",
                                         .type = ParamType::boolean,
                                         .defaults = {"false"},
                                         .full_defaults = {"false", "true"},
                                         .help = "copies overlap"}},
                 false, true));
  r.add(stand_in(
      "integrity",
      std::vector<ParamSpec>{
          {.name = "fraction",
           .type = ParamType::real,
           .defaults = {"0.95"},
           .full_defaults = {"0.98"},
           .minimum = 0.01,
           .maximum = 0.99,
           .help = "share of free memory tested"},
          {.name = "patterns", .type = ParamType::text, .defaults = {"ones,zeros"}, .help = "patterns"},
          {.name = "block",
           .type = ParamType::bytes,
           .defaults = {"1G"},
           .minimum = 1 << 20,
           .help = "block size"}},
      false, true));
  r.add(stand_in("collectives",
                 std::vector<ParamSpec>{{.name = "op",
                                         .type = ParamType::choice,
                                         .defaults = {"all_reduce"},
                                         .choices = {"all_reduce", "all_gather"},
                                         .help = "op"},
                                        {.name = "compute_us",
                                         .type = ParamType::real,
                                         .defaults = {"0"},
                                         .full_defaults = {"0", "500"},
                                         .help = "compute per step"},
                                        {.name = "bytes",
                                         .type = ParamType::bytes,
                                         .defaults = {"1M"},
                                         .minimum = 4,
                                         .maximum = 1099511627776.0,
                                         .help = "message size"},
                                        {.name = "warm",
                                         .type = ParamType::integer,
                                         .defaults = {"-1"},
                                         .minimum = -5,
                                         .maximum = 5,
                                         .help = "signed"}},
                 true, false));
  return r;
}

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
  static const Registry registry = stand_in_registry();  // read-only, as the real one
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
