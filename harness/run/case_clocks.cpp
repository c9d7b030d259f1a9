#include "harness/run/case_clocks.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "harness/env/health.hpp"
#include "harness/results/row.hpp"
#include "harness/run/context.hpp"

namespace memstress {
namespace {

// The causes that count as a slowdown (see the note): heat, and the external power brake.
constexpr std::string_view kSlowdownFigure = "throttle.slowdown_ms";
constexpr std::array<std::string_view, 3> kSlowdowns = {"throttle.thermal_ms", "throttle.hw_thermal_ms",
                                                        "throttle.hw_power_brake_ms"};

}  // namespace

CaseClocks::CaseClocks(HealthWatch* watch) : watch_(watch) {
  if (watch_ != nullptr) {
    start_ = watch_->throttle_ms();
  }
}

void CaseClocks::record(CaseContext& ctx) {
  if (watch_ == nullptr) {
    return;
  }
  const std::string unavailable = watch_->unavailable();
  if (!unavailable.empty()) {
    ctx.note(not_measured_note(kSlowdownFigure, unavailable));
    return;
  }
  const std::vector<std::pair<std::string, double>> now_all = watch_->throttle_ms();
  if (now_all.empty() && !start_.empty()) {
    ctx.note(not_measured_note(kSlowdownFigure,
                               "the clock counters read before the case could not be read after it"));
    return;
  }
  double slowdown = 0;
  bool slowdown_counted = false;
  std::vector<std::string> causes;
  for (const auto& [figure, now] : now_all) {
    const auto start =
        std::find_if(start_.begin(), start_.end(), [&](const auto& s) { return s.first == figure; });
    if (start == start_.end()) {
      continue;  // no reading before the case
    }
    const double held = std::max(0.0, now - start->second);
    ctx.record(figure, "ms", Better::lower, held);
    if (std::find(kSlowdowns.begin(), kSlowdowns.end(), figure) != kSlowdowns.end()) {
      slowdown += held;
      slowdown_counted = true;
      if (held > 0) {
        causes.push_back(fmt::format("{} {:.0f} ms", figure, held));
      }
    }
  }
  if (slowdown_counted) {
    ctx.record(kSlowdownFigure, "ms", Better::lower, slowdown);
    if (slowdown > 0) {
      ctx.note(fmt::format("{}: clocks slowed for heat or a power brake during this case ({})",
                           kSlowdownFigure, fmt::join(causes, ", ")));
    }
  } else {
    ctx.note(not_measured_note(kSlowdownFigure, "this GPU counts no thermal or power-brake slowdown time"));
  }
}

}  // namespace memstress
