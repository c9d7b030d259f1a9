#include "harness/run/rank_table.hpp"

#include <fmt/format.h>

#include "harness/core/text_table.hpp"
#include "harness/run/quantity.hpp"

namespace memstress {

std::string format_rank_summary(const std::vector<RankSpread>& spreads, double threshold) {
  std::vector<TableLine> lines{
      {"WORKLOAD", "CASE", "ALLOCATOR", "METRIC", "RANKS", "MIN", "MEDIAN", "MAX", "UNIT", "STRAGGLERS"}};
  int flagged = 0;
  for (const RankSpread& s : spreads) {
    std::string names;
    for (const Straggler& x : s.stragglers) {
      names += fmt::format("{}rank {}{} ({:.0f}% worse)", names.empty() ? "" : ", ", x.rank,
                           x.node.empty() ? "" : " on " + x.node, x.worse * 100.0);
    }
    flagged += s.stragglers.empty() ? 0 : 1;
    // In the unit the median chose (Note [One unit style per metric]).
    const DisplayScale scale = display_scale(s.median, s.unit);
    const auto number = [&](double v) { return format_number(v / scale.divisor); };
    lines.push_back({s.workload, s.case_label, s.allocator, s.metric, std::to_string(s.ranks),
                     fmt::format("{} (rank {})", number(s.min), s.min_rank), number(s.median),
                     fmt::format("{} (rank {})", number(s.max), s.max_rank),
                     scale.unit.empty() ? s.unit : scale.unit, names.empty() ? "-" : names});
  }
  return fmt::format("\nAcross ranks (stragglers: worse than the median by more than {:.0f}%):\n",
                     threshold * 100.0) +
         render_table(lines) +
         fmt::format("{} of {} case metrics have stragglers\n", flagged, spreads.size());
}

}  // namespace memstress
