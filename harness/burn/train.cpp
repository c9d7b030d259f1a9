#include "harness/burn/train.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <utility>

#include "harness/burn/interval_row.hpp"
#include "harness/core/error.hpp"

namespace memstress {
namespace {

constexpr std::array kTrained = {"memory.GB/s", "h2d.GB/s", "d2h.GB/s", "gemm.bf16.TFLOP/s",
                                 "gemm.fp64.TFLOP/s"};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// One GPU of one burn: its intervals' values of each metric, by interval index.
struct GpuSeries {
  std::string label;  // for the lines: "rank 0, cuda:0"
  std::string node;
  std::map<std::string, std::map<int, double>> values;
};

int interval_of(const ResultRow& row, const Results& burn, std::string_view what) {
  const auto it = row.params.find("interval");
  try {
    if (it != row.params.end()) {
      return std::stoi(it->second);
    }
  } catch (const std::exception&) {
  }
  throw InputError(
      fmt::format("{} {}: a burn row without a whole interval number", what, burn.path.string()));
}

std::vector<GpuSeries> series_of(const BurnProfile& base, const Results& burn, std::string_view what) {
  const std::string file = burn.path.string();
  if (burn.status != "complete") {
    throw InputError(fmt::format("{} {}: the burn is {} (train on complete healthy burns only)", what, file,
                                 burn.status.empty() ? "of unknown status" : burn.status));
  }
  std::map<std::string, GpuSeries> gpus;  // by UUID, else rank and label
  for (const ResultRow& row : burn.rows) {
    if (row.workload != kBurnWorkload) {
      continue;
    }
    const std::string who = describe(row.gpu, row.rank);
    if (row.verdict != Verdict::pass) {
      throw InputError(fmt::format("{} {}: interval {} of {} is {} ({}): train on healthy burns only", what,
                                   file, row.params.contains("interval") ? row.params.at("interval") : "?",
                                   who, to_string(row.verdict), row.reason));
    }
    if (!base.gpu.empty() && row.device != base.gpu) {
      throw InputError(fmt::format("{} {}: {} is a {}, the profile {} is for {}", what, file, who, row.device,
                                   base.name, base.gpu));
    }
    const std::string key =
        !row.gpu.uuid.empty() ? row.gpu.uuid : fmt::format("{}/{}", row.rank.value_or(0), row.gpu.label);
    GpuSeries& g = gpus[key];
    g.label = who;
    g.node = row.gpu.host;
    const int index = interval_of(row, burn, what);
    for (const char* metric : kTrained) {
      if (const MetricResult* m = row.metric(metric); m != nullptr && std::isfinite(m->summary.median)) {
        g.values[metric][index] = m->summary.median;
      }
    }
  }
  std::vector<GpuSeries> out;
  out.reserve(gpus.size());
  for (auto& [key, g] : gpus) {
    out.push_back(std::move(g));
  }
  return out;
}

// The values of intervals past the warm-up.
std::vector<double> steady(const BurnProfile& base, const std::map<int, double>& by_interval) {
  std::vector<double> v;
  for (const auto& [index, value] : by_interval) {
    if (index >= base.warmup_intervals) {
      v.push_back(value);
    }
  }
  return v;
}

double round_up_pct(double pct) {
  return std::ceil(pct);
}

}  // namespace

BurnTraining train_burn(const BurnProfile& base, const std::vector<Results>& burns, std::string_view what) {
  BurnTraining t{base, {}};
  std::map<std::string, std::vector<double>> steady_medians;  // metric -> a median per GPU and burn
  double deepest_drift = 0;                                   // fraction below a GPU's steady median
  std::string deepest_drift_at;
  double deepest_lag = -1;  // -1: no node of two GPUs
  std::string deepest_lag_at;
  std::size_t gpu_burns = 0;
  for (const Results& burn : burns) {
    const std::vector<GpuSeries> gpus = series_of(base, burn, what);
    bool any = false;
    for (const GpuSeries& g : gpus) {
      for (const auto& [metric, by_interval] : g.values) {
        const std::vector<double> v = steady(base, by_interval);
        if (v.empty()) {
          continue;
        }
        any = true;
        const double mid = median(v);
        steady_medians[metric].push_back(mid);
        for (const auto& [index, value] : by_interval) {
          if (index >= base.warmup_intervals && mid > 0 && 1 - value / mid > deepest_drift) {
            deepest_drift = 1 - value / mid;
            deepest_drift_at = fmt::format("{} interval {} of {}, {} {:.4g} against {:.4g}", g.label, index,
                                           burn.path.filename().string(), metric, value, mid);
          }
        }
      }
    }
    if (!any) {
      throw InputError(fmt::format("{} {}: no burn interval past the warm-up ({} interval(s)) to train on",
                                   what, burn.path.string(), base.warmup_intervals));
    }
    gpu_burns += gpus.size();
    // Lag: each interval's values of the GPUs of one node against their median.
    std::map<std::string, std::map<std::string, std::map<int, std::vector<std::pair<double, std::string>>>>>
        by_node;  // node -> metric -> interval -> (value, GPU)
    for (const GpuSeries& g : gpus) {
      for (const auto& [metric, by_interval] : g.values) {
        for (const auto& [index, value] : by_interval) {
          by_node[g.node][metric][index].emplace_back(value, g.label);
        }
      }
    }
    for (const auto& [node, metrics] : by_node) {
      for (const auto& [metric, intervals] : metrics) {
        for (const auto& [index, values] : intervals) {
          if (values.size() < 2 || index < base.warmup_intervals) {
            continue;
          }
          std::vector<double> v;
          for (const auto& [value, who] : values) {
            v.push_back(value);
          }
          const double mid = median(v);
          for (const auto& [value, who] : values) {
            const double lag = mid > 0 ? std::max(0.0, 1 - value / mid) : 0;
            if (lag > deepest_lag) {
              deepest_lag = lag;
              deepest_lag_at =
                  fmt::format("{} interval {} of {}, {}", who, index, burn.path.filename().string(), metric);
            }
          }
        }
      }
    }
  }
  t.lines.push_back(fmt::format("trained on {} burn(s), {} GPU burn(s); warm-up: {} interval(s)",
                                burns.size(), gpu_burns, base.warmup_intervals));
  for (const char* metric : kTrained) {
    const auto it = steady_medians.find(metric);
    if (it == steady_medians.end() || it->second.empty()) {
      t.lines.push_back(fmt::format("{}: not measured, its golden value left as it was", metric));
      continue;
    }
    const double golden = median(it->second);
    if (!(golden > 1e-6)) {
      t.lines.push_back(fmt::format("{}: measured {:.4g}, no golden value", metric, golden));
      continue;
    }
    const auto [lo, hi] = std::minmax_element(it->second.begin(), it->second.end());
    auto g = std::find_if(t.profile.golden.begin(), t.profile.golden.end(),
                          [&](const BurnGolden& b) { return b.metric == metric; });
    if (g == t.profile.golden.end()) {
      t.profile.golden.push_back({metric, golden, 0.85});
      g = std::prev(t.profile.golden.end());
    }
    g->golden = golden;
    t.lines.push_back(
        fmt::format("{}: golden {:.4g} (steady medians {:.4g} to {:.4g} over {}), FAIL below {:.4g}", metric,
                    golden, *lo, *hi, it->second.size(), g->factor * golden));
  }
  t.profile.drift_pct = std::max(kMinDriftPct, round_up_pct(200 * deepest_drift));
  t.lines.push_back(fmt::format("drift_pct: {:g} (the deepest healthy drop {:.1f}%{}{})", t.profile.drift_pct,
                                100 * deepest_drift, deepest_drift_at.empty() ? "" : ": ", deepest_drift_at));
  if (deepest_lag >= 0) {
    t.profile.lag_pct = std::max(kMinDriftPct, round_up_pct(200 * deepest_lag));
    t.lines.push_back(fmt::format("lag_pct: {:g} (the deepest healthy lag {:.1f}%: {})", t.profile.lag_pct,
                                  100 * deepest_lag, deepest_lag_at));
  } else {
    t.lines.push_back(fmt::format("lag_pct: {:g}, as it was (no node had two GPUs)", t.profile.lag_pct));
  }
  return t;
}

std::string burn_profile_yaml(const BurnProfile& p, const std::vector<std::string>& comment) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << p.name;
  if (!p.gpu.empty()) {
    out << YAML::Key << "gpu" << YAML::Value << p.gpu;
  }
  out << YAML::Key << "duration" << YAML::Value << fmt::format("{:g}s", p.duration_s);
  out << YAML::Key << "interval" << YAML::Value << fmt::format("{:g}", p.interval_s);
  out << YAML::Key << "memory" << YAML::Value << fmt::format("{:g}", p.memory_share);
  out << YAML::Key << "warmup_intervals" << YAML::Value << p.warmup_intervals;
  out << YAML::Key << "drift_pct" << YAML::Value << fmt::format("{:g}", p.drift_pct);
  out << YAML::Key << "lag_pct" << YAML::Value << fmt::format("{:g}", p.lag_pct);
  out << YAML::Key << "allowed_clock_reasons" << YAML::Value << YAML::Flow << p.allowed_clock_reason_names;
  if (!p.golden.empty()) {
    out << YAML::Key << "golden" << YAML::Value << YAML::BeginMap;
    for (const BurnGolden& g : p.golden) {
      out << YAML::Key << g.metric << YAML::Value << YAML::Flow << YAML::BeginMap;
      out << YAML::Key << "golden" << YAML::Value << fmt::format("{:.5g}", g.golden);
      out << YAML::Key << "factor" << YAML::Value << fmt::format("{:g}", g.factor);
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  std::string text;
  for (const std::string& line : comment) {
    text += "# " + line + "\n";
  }
  return text + out.c_str() + "\n";
}

}  // namespace memstress
