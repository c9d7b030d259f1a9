#pragma once

#include <cstddef>
#include <span>

namespace memstress {

// Robust statistics of one metric's samples. Percentiles interpolate linearly between order statistics
// (numpy's default), so p50 is the usual median.
struct Summary {
  std::size_t n = 0;
  double median = 0;
  double p10 = 0;
  double p90 = 0;
  double p99 = 0;
  double min = 0;
  double max = 0;
  double mean = 0;
  double stddev = 0;  // sample standard deviation (n - 1)
  double cv = 0;      // stddev / mean; 0 when the mean is 0
};

Summary summarize(std::span<const double> samples);

// The q-quantile (0 <= q <= 1) of already sorted samples.
double quantile_sorted(std::span<const double> sorted, double q);

}  // namespace memstress
