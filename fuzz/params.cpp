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

#include "fuzz/fuzz_target.hpp"
#include "harness/core/units.hpp"
#include "harness/run/plan.hpp"
#include "harness/run/registry.hpp"
#include "harness/run/workload.hpp"

namespace {

using namespace memstress;

class StandIn final : public Workload {
 public:
  StandIn(std::string name, std::vector<ParamSpec> params, bool all_ranks, bool in_default_job)
      : name_(std::move(name)), params_(std::move(params)), all_ranks_(all_ranks), default_(in_default_job) {}

  [[nodiscard]] std::string_view name() const noexcept override { return name_; }
  [[nodiscard]] std::string_view summary() const noexcept override { return "stand-in"; }
  [[nodiscard]] std::vector<ParamSpec> params() const override { return params_; }
  [[nodiscard]] Requirements requirements() const noexcept override { return {false, 1, all_ranks_}; }
  [[nodiscard]] bool in_default_job() const noexcept override { return default_; }
  [[nodiscard]] bool applies(const ParamSet& params) const override {
    // As transfers: pageable host memory means nothing for a device-to-device copy.
    for (const auto& [key, value] : params.values()) {
      if (key == "host" && value == "pageable") {
        return std::none_of(params.values().begin(), params.values().end(),
                            [](const auto& kv) { return kv.first == "direction" && kv.second == "d2d"; });
      }
    }
    return true;
  }
  [[nodiscard]] std::unique_ptr<CaseRun> prepare(CaseContext& /*ctx*/) const override { return nullptr; }

 private:
  std::string name_;
  std::vector<ParamSpec> params_;
  bool all_ranks_;
  bool default_;
};

// Axes as the suites declare them (suites/*.cpp): every type, with and without bounds and --full values.
Registry stand_in_registry() {
  Registry r;
  r.add(std::make_unique<StandIn>(
      "alloc-smoke",
      std::vector<ParamSpec>{
          {"bytes", ParamType::bytes, {"1M", "64M", "1G"}, {"512", "1M", "64M", "1G"}, {}, "buffer size", 1},
          {"count", ParamType::integer, {"16"}, {"16", "64"}, {}, "buffers live at once", 1}},
      false, true));
  r.add(std::make_unique<StandIn>(
      "transfers",
      std::vector<ParamSpec>{
          {"direction", ParamType::choice, {"h2d", "d2h"}, {}, {"h2d", "d2h", "d2d"}, "copy direction"},
          {"host",
           ParamType::choice,
           {"pinned"},
           {"pinned", "pageable"},
           {"pinned", "pageable"},
           "host memory"},
          {"bytes", ParamType::bytes, {"256M"}, {"16M", "256M", "1G"}, {}, "copy size", 16},
          {"overlap", ParamType::boolean, {"false"}, {"false", "true"}, {}, "copies overlap"}},
      false, true));
  r.add(std::make_unique<StandIn>(
      "integrity",
      std::vector<ParamSpec>{
          {"fraction", ParamType::real, {"0.95"}, {"0.98"}, {}, "share of free memory tested", 0.01, 0.99},
          {"patterns", ParamType::text, {"ones,zeros"}, {}, {}, "patterns"},
          {"block", ParamType::bytes, {"1G"}, {}, {}, "block size", 1 << 20}},
      false, true));
  r.add(std::make_unique<StandIn>(
      "collectives",
      std::vector<ParamSpec>{
          {"op", ParamType::choice, {"all_reduce"}, {}, {"all_reduce", "all_gather"}, "op"},
          {"compute_us", ParamType::real, {"0"}, {"0", "500"}, {}, "compute per step"},
          {"bytes", ParamType::bytes, {"1M"}, {}, {}, "message size", 4, 1099511627776.0},
          {"warm", ParamType::integer, {"-1"}, {}, {}, "signed", -5, 5}},
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
    const std::vector<ParamSpec> specs = c.workload->params();
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
    std::optional<std::string_view> minbytes, maxbytes, stepbytes;
    double factor = 2.0;
    while (!input.empty()) {
      const std::size_t end = std::min(input.find('\n'), input.size());
      const std::string_view line = input.substr(0, end);
      input.remove_prefix(std::min(end + 1, input.size()));
      if (line.starts_with("-p ")) {
        request.overrides.push_back(ParamOverride::parse(after(line, "-p ")));
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
                     increment, request.max_cases);
    }
    check_canonical(registry, request, plan_cases(registry, request));
  });
}
