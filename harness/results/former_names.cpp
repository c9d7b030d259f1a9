#include "harness/results/former_names.hpp"

#include <algorithm>
#include <cmath>

namespace memstress {
namespace {

bool same_value(double a, double b) noexcept {
  return a == b || (std::isnan(a) && std::isnan(b));
}

}  // namespace

void adopt_one_names(std::string_view workload, std::vector<MetricResult>& metrics) {
  for (const FormerName& f : kFormerNames) {
    if (f.workload != workload) {
      continue;
    }
    const auto former = std::find_if(metrics.begin(), metrics.end(),
                                     [&](const MetricResult& m) { return m.name == f.former; });
    if (former == metrics.end()) {
      continue;
    }
    const MetricResult* one = find_metric(metrics, f.name);
    if (one == nullptr) {
      former->name = std::string(f.name);
    } else if (same_value(one->summary.median, former->summary.median)) {
      metrics.erase(former);
    }  // they disagree: both stay, each as recorded
  }
}

}  // namespace memstress
