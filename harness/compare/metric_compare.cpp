#include "harness/compare/metric_compare.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/stats/mann_whitney.hpp"
#include "harness/stats/summary.hpp"

namespace memstress::compare {
namespace {

std::vector<double> finite_samples(const std::vector<double>& samples, double factor) {
  std::vector<double> out;
  out.reserve(samples.size());
  for (const double s : samples) {
    if (std::isfinite(s)) {
      out.push_back(s * factor);
    }
  }
  return out;
}

// The median of the samples where there are any, else the one the file gives (aggregates only).
double median_of(const std::vector<double>& samples, const MetricResult& m, double factor) {
  return samples.empty() ? m.summary.median * factor : summarize(samples).median;
}

std::optional<double> change_pct(double base, double next) {
  if (!std::isfinite(base) || !std::isfinite(next)) {
    return std::nullopt;
  }
  if (base == 0) {
    return next == 0 ? std::optional<double>(0.0) : std::nullopt;
  }
  return (next - base) / std::abs(base) * 100.0;
}

}  // namespace

std::string_view to_string(Outcome outcome) noexcept {
  switch (outcome) {
    case Outcome::same:
      return "SAME";
    case Outcome::better:
      return "BETTER";
    case Outcome::worse:
      return "WORSE";
    case Outcome::unsure:
      return "UNSURE";
    case Outcome::not_judged:
      return "-";
  }
  return "-";
}

double parse_threshold(std::string_view text, std::string_view what) {
  std::string_view number = text;
  if (!number.empty() && number.back() == '%') {
    number.remove_suffix(1);
  }
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc{} || end != number.data() + number.size() || !std::isfinite(value) ||
      value <= 0) {
    throw InputError(fmt::format("{} '{}': give a positive percentage, e.g. 5 or 2.5%", what, text));
  }
  return value;
}

std::optional<double> time_unit_factor(std::string_view from, std::string_view to) {
  static constexpr std::array<std::pair<std::string_view, double>, 4> kUnits{
      {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}}};
  std::optional<double> f;
  std::optional<double> t;
  for (const auto& [name, seconds] : kUnits) {
    f = name == from ? std::optional<double>(seconds) : f;
    t = name == to ? std::optional<double>(seconds) : t;
  }
  if (!f || !t) {
    return std::nullopt;
  }
  return *f / *t;
}

MetricComparison compare_metric(const MetricResult& base, const MetricResult& next,
                                const CompareOptions& options) {
  MetricComparison c;
  c.name = base.name;
  c.unit = base.unit;
  c.better = base.better;
  double factor = 1.0;
  if (next.unit != base.unit) {
    const std::optional<double> f = time_unit_factor(next.unit, base.unit);
    if (!f) {
      c.base_median = base.summary.median;
      c.new_median = next.summary.median;
      c.outcome = Outcome::unsure;
      c.note = fmt::format("units differ: {} in BASE, {} in NEW", base.unit, next.unit);
      return c;
    }
    factor = *f;
  }
  const std::vector<double> a = finite_samples(base.samples, 1.0);
  const std::vector<double> b = finite_samples(next.samples, factor);
  c.base_n = a.size();
  c.new_n = b.size();
  c.base_median = median_of(a, base, 1.0);
  c.new_median = median_of(b, next, factor);
  c.change_pct = change_pct(c.base_median, c.new_median);
  const bool enough = a.size() >= options.min_samples && b.size() >= options.min_samples;
  if (enough) {
    c.p_value = mann_whitney_u(a, b).p_value;
  }

  if (!std::isfinite(c.base_median) || !std::isfinite(c.new_median)) {
    const bool neither = !std::isfinite(c.base_median) && !std::isfinite(c.new_median);
    // Measured in BASE and not in NEW: what NEW lost is a regression (fail closed), never "no regression".
    const bool lost = std::isfinite(c.base_median) && !std::isfinite(c.new_median);
    c.outcome = neither ? Outcome::not_judged : lost ? Outcome::worse : Outcome::unsure;
    c.note = neither ? "no value"
             : lost  ? std::string("no value in NEW: not measured there")
                     : std::string("no value in BASE");
    return c;
  }
  if (c.better == Better::none) {
    c.outcome = Outcome::not_judged;
    c.note = "no better direction";
    return c;
  }
  // A change from 0 has no percentage; it is beyond any threshold.
  if (c.change_pct && std::abs(*c.change_pct) <= options.threshold_pct * (1 + 1e-12)) {
    c.outcome = Outcome::same;
    return c;
  }
  if (!enough) {
    c.outcome = Outcome::unsure;
    c.note =
        fmt::format("too few samples ({} and {}; {} a side needed)", c.base_n, c.new_n, options.min_samples);
    return c;
  }
  if (*c.p_value >= options.alpha) {
    c.outcome = Outcome::unsure;
    c.note = fmt::format("not significant (p >= {})", options.alpha);
    return c;
  }
  const bool higher = c.new_median > c.base_median;
  c.outcome = higher == (c.better == Better::higher) ? Outcome::better : Outcome::worse;
  return c;
}

}  // namespace memstress::compare
