#include "harness/burn/profile.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <nlohmann/json.hpp>

#include "harness/burn/duration.hpp"
#include "harness/core/error.hpp"
#include "harness/core/input_file.hpp"
#include "harness/core/json_field.hpp"
#include "harness/env/telemetry.hpp"

namespace memstress {
namespace {

constexpr std::size_t kMaxProfileBytes = 1U << 20U;
constexpr int kMaxDepth = 16;

// YAML as JSON, scalars kept as text: a key given twice, or a key that is not a name, is refused (yaml-cpp
// would keep the first silently).
nlohmann::json as_json(const YAML::Node& node, const std::string& where, int depth = 0) {
  if (depth > kMaxDepth) {
    throw InputError(fmt::format("{}: nested too deeply", where));
  }
  if (node.IsMap()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) {
        throw InputError(fmt::format("{}: a key must be a name", where));
      }
      const std::string key = kv.first.Scalar();
      if (out.contains(key)) {
        throw InputError(fmt::format("{}: key `{}` is given twice", where, key));
      }
      std::string path = where;
      path += where.empty() ? "" : ".";
      path += key;
      out[key] = as_json(kv.second, path, depth + 1);
    }
    return out;
  }
  if (node.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (const YAML::Node& item : node) {
      out.push_back(as_json(item, where, depth + 1));
    }
    return out;
  }
  return node.IsNull() ? nlohmann::json() : nlohmann::json(node.Scalar());
}

void only_keys(const JsonField& map, std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : map.members()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      throw InputError(fmt::format("{}: unknown key `{}`; expected {}",
                                   map.path().empty() ? "profile" : map.path(), key,
                                   fmt::join(allowed, ", ")));
    }
  }
}

std::string text(const JsonField& f) {
  return f.string();  // names the key where it is a list or a map (scalars are all text here)
}

// A number from its text: finite, a normal double (no 1e-320), within [lo, hi].
double number(const JsonField& f, double lo, double hi) {
  const std::string t = text(f);
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != t.size() || !std::isfinite(v) || (v != 0 && !std::isnormal(v)) || v < lo ||
      v > hi) {
    throw InputError(fmt::format("{}: '{}' must be a number from {:g} to {:g}", f.path(), t, lo, hi));
  }
  return v;
}

// The metrics a burn's rows give that a golden value can bound (interval_row.cpp).
constexpr std::array kGoldenMetrics = {"memory.GB/s", "h2d.GB/s", "d2h.GB/s", "gemm.bf16.TFLOP/s",
                                       "gemm.fp64.TFLOP/s"};

}  // namespace

BurnProfile default_burn_profile() {
  BurnProfile p;
  p.name = "default";
  for (const char* r : {"idle", "applications_clocks", "sw_power_cap", "sync_boost"}) {
    p.allowed_clock_reason_names.emplace_back(r);
    p.allowed_clock_reasons |= *clock_reason_bit(r);
  }
  return p;
}

BurnProfile parse_burn_profile(const std::string& yaml, const std::string& name) {
  try {
    YAML::Node root;
    try {
      root = YAML::Load(yaml);
    } catch (const YAML::Exception& e) {
      throw InputError(fmt::format("not YAML: {}", e.msg));
    }
    if (!root.IsMap()) {
      throw InputError("must be a map of keys to values");
    }
    const nlohmann::json doc = as_json(root, "");
    const JsonField f(doc);
    only_keys(f, {"name", "gpu", "description", "duration", "interval", "memory", "drift_pct", "lag_pct",
                  "allowed_clock_reasons", "golden", "warmup_intervals"});
    BurnProfile p = default_burn_profile();
    p.name = f.find("name") ? text(f["name"]) : name;
    p.gpu = f.find("gpu") ? text(f["gpu"]) : std::string();
    if (const auto d = f.find("duration")) {
      p.duration_s = parse_duration(text(*d), "duration", kMinBurnSeconds, kMaxBurnSeconds);
    }
    if (const auto d = f.find("interval")) {
      p.interval_s = parse_duration(text(*d), "interval", kMinIntervalSeconds, kMaxIntervalSeconds);
    }
    if (const auto m = f.find("memory")) {
      p.memory_share = number(*m, 0.01, 0.99);
    }
    if (const auto d = f.find("drift_pct")) {
      p.drift_pct = number(*d, 0.1, 99);
    }
    if (const auto l = f.find("lag_pct")) {
      p.lag_pct = number(*l, 0.1, 99);
    }
    if (const auto w = f.find("warmup_intervals")) {
      p.warmup_intervals = static_cast<int>(number(*w, 0, 1000));
    }
    if (const auto reasons = f.find("allowed_clock_reasons")) {
      p.allowed_clock_reasons = 0;
      p.allowed_clock_reason_names.clear();
      for (const JsonField& r : reasons->elements()) {
        const std::string reason = text(r);
        const std::optional<std::uint64_t> bit = clock_reason_bit(reason);
        if (!bit) {
          throw InputError(fmt::format("{}: unknown clock event reason `{}`", r.path(), reason));
        }
        p.allowed_clock_reasons |= *bit;
        p.allowed_clock_reason_names.push_back(reason);
      }
    }
    if (const auto golden = f.find("golden")) {
      for (const auto& [metric, g] : golden->members()) {
        if (std::find(kGoldenMetrics.begin(), kGoldenMetrics.end(), metric) == kGoldenMetrics.end()) {
          throw InputError(fmt::format("golden: unknown metric `{}`; expected {}", metric,
                                       fmt::join(kGoldenMetrics, ", ")));
        }
        only_keys(g, {"golden", "factor"});
        BurnGolden b{metric, number(g["golden"], 1e-6, 1e9), 0.85};
        if (const auto factor = g.find("factor")) {
          b.factor = number(*factor, 0.01, 1);
        }
        p.golden.push_back(b);
      }
    }
    return p;
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", name, e.what()));
  }
}

BurnProfile load_burn_profile(const std::filesystem::path& path, std::string_view what) {
  const std::string name = fmt::format("{} {}", what, path.string());
  std::string yaml;
  try {
    yaml = read_input_file(path, kMaxProfileBytes, "a burn profile");
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", name, e.what()));
  }
  return parse_burn_profile(yaml, name);
}

}  // namespace memstress
