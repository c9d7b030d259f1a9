#include "harness/run/metric_names.hpp"

#include <array>
#include <cmath>
#include <utility>

namespace memstress {
namespace {

bool same_value(double a, double b) noexcept {
  return a == b || (std::isnan(a) && std::isnan(b));
}

}  // namespace

std::string_view display_name(std::string_view metric) noexcept {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kOneName{{
      {"ooms", "num_ooms"},
      {"oom_count", "num_ooms"},
      {"trials", "probes"},
      {"largest", "largest_allocatable"},
      {"device_allocated_peak", "peak_allocated"},
      {"device_reserved_peak", "peak_reserved"},
  }};
  for (const auto& [recorded, one] : kOneName) {
    if (metric == recorded) {
      return one;
    }
  }
  return metric;
}

std::vector<ShownMetric> shown_metrics(const Row& row) {
  std::vector<ShownMetric> shown;
  for (const MetricResult& m : row.metrics) {
    const std::string_view name = display_name(m.name);
    if (name == m.name) {
      shown.push_back({&m, name});
      continue;
    }
    // Recorded under another name: is the figure also there under its one name?
    const MetricResult* same = row.metric(name);
    if (same == nullptr) {
      shown.push_back({&m, name});
    } else if (!same_value(same->summary.median, m.summary.median)) {
      shown.push_back({&m, m.name});  // they disagree: show both, each as recorded
    }
  }
  return shown;
}

}  // namespace memstress
