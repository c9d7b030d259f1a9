// memstress list: the registered workloads, their axes with defaults and bounds, and what they need; the
// allocator peers. `--format json` is the registry as data: docs/run.md's tables and the Python package's
// facts (python/memstress/registry_facts.py) are generated from it (scripts/dev/registry.py).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

#include "apps/commands.hpp"
#include "harness/alloc/factory.hpp"
#include "harness/core/json_text.hpp"
#include "harness/results/former_names.hpp"
#include "suites/registry.hpp"

namespace memstress::app {
namespace {

std::string needs(const Requirements& req) {
  std::vector<std::string> parts;
  if (req.real_gpu) {
    parts.emplace_back("a real GPU");
  }
  if (req.min_ranks > 1) {
    parts.push_back(fmt::format("{} ranks", req.min_ranks));
  }
  if (parts.empty()) {
    return req.more.empty() ? "any device (the simulated one too)" : fmt::format("any device ({})", req.more);
  }
  return fmt::format("{}{}", fmt::join(parts, ", "), req.more.empty() ? "" : fmt::format(" ({})", req.more));
}

// An axis's bounds as `list` shows them: "1 to 32", "at least 16" (nothing for choices, text, booleans).
std::string bounds_text(const ParamSpec& p) {
  if (p.type != ParamType::integer && p.type != ParamType::bytes && p.type != ParamType::real) {
    return "";
  }
  if (std::isfinite(p.maximum)) {
    return fmt::format(", {} to {}", p.bound_text(p.minimum), p.bound_text(p.maximum));
  }
  return fmt::format(", at least {}", p.bound_text(p.minimum));
}

nlohmann::json list_json(const Registry& registry) {
  nlohmann::json workloads = nlohmann::json::array();
  for (const auto& w : registry.all()) {
    nlohmann::json params = nlohmann::json::array();
    for (const ParamSpec& p : w->params()) {
      params.push_back(
          {{"name", p.name},
           {"type", to_string(p.type)},
           {"defaults", p.defaults},
           {"full_defaults", p.full_defaults.empty() ? p.defaults : p.full_defaults},
           {"choices", p.choices},
           {"minimum", p.minimum},
           {"maximum", std::isfinite(p.maximum) ? nlohmann::json(p.maximum) : nlohmann::json(nullptr)},
           {"help", p.help}});
    }
    const Requirements& req = w->requirements();
    workloads.push_back({{"name", w->name()},
                         {"summary", w->summary()},
                         {"default_job", w->in_default_job()},
                         {"max_repetitions", w->max_repetitions()},
                         {"needs",
                          {{"real_gpu", req.real_gpu},
                           {"min_ranks", req.min_ranks},
                           {"all_ranks", req.all_ranks},
                           {"more", req.more},
                           {"text", needs(req)}}},
                         {"headline", w->headline()},
                         {"params", params}});
  }
  nlohmann::json allocators = nlohmann::json::array();
  for (const std::string_view a : allocator_names()) {
    allocators.push_back(a);
  }
  nlohmann::json peers = nlohmann::json::array();
  for (const PeerInfo& p : allocator_peers()) {
    peers.push_back({{"name", p.name},
                     {"origin", p.origin},
                     {"what", p.what},
                     {"simulated", p.simulated},
                     {"baseline", p.baseline},
                     {"built", p.built}});
  }
  nlohmann::json former = nlohmann::json::array();
  for (const FormerName& f : kFormerNames) {
    former.push_back({{"workload", f.workload}, {"former", f.former}, {"name", f.name}});
  }
  return {{"workloads", workloads},
          {"allocators", allocators},
          {"peers", peers},
          {"plugin", {{"name", kPluginForm}, {"what", kPluginWhat}}},
          {"former_metric_names", former}};
}

std::string list_text(const Registry& registry) {
  std::string out;
  for (const auto& w : registry.all()) {
    out += fmt::format(
        "{}{}{}\n  {}\n  needs: {}\n", w->name(), w->in_default_job() ? "" : " (not in the default job)",
        w->max_repetitions() > 0
            ? fmt::format(" (at most {} repetition(s) a case, no warm-up)", w->max_repetitions())
            : "",
        w->summary(), needs(w->requirements()));
    for (const ParamSpec& p : w->params()) {
      const auto& full = p.full_defaults.empty() ? p.defaults : p.full_defaults;
      out += fmt::format("  -p {}={}  ({}{}; --full: {}){}{}\n", p.name, fmt::join(p.defaults, ","),
                         to_string(p.type), bounds_text(p), fmt::join(full, ","),
                         p.choices.empty() ? "" : fmt::format(" one of {}", fmt::join(p.choices, "|")),
                         p.help.empty() ? "" : "  " + p.help);
    }
    out += '\n';
  }
  out += fmt::format("allocators (--allocator): {}, or {} ({})\n", fmt::join(allocator_names(), ", "),
                     kPluginForm, kPluginWhat);
  return out;
}

}  // namespace

Subcommand add_list(CLI::App& app) {
  auto format = std::make_shared<std::string>("table");
  CLI::App* sub = app.add_subcommand("list", "List workloads with their parameters, defaults and needs");
  sub->add_option("--format", *format, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  return {sub, [format] {
            const Registry registry = suites::builtin_registry();
            fmt::print("{}",
                       *format == "json" ? json_text(list_json(registry), 2) + "\n" : list_text(registry));
            return 0;
          }};
}

}  // namespace memstress::app
