#pragma once

#include <string>
#include <utility>
#include <vector>

#include "harness/results/row.hpp"

namespace memstress::testing {

// A metric with these samples and their summary, for rows made by hand.
inline MetricResult metric_of(std::string name, std::string unit, Better better,
                              std::vector<double> samples) {
  MetricResult m;
  m.name = std::move(name);
  m.unit = std::move(unit);
  m.better = better;
  m.samples = std::move(samples);
  m.summary = summarize(m.samples);
  return m;
}

}  // namespace memstress::testing
