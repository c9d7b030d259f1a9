#include "harness/results/rank_summary.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "harness/stats/summary.hpp"

namespace memstress {
namespace {

struct Sample {
  int rank;
  double value;
  const std::string* node;
};

// How much worse than `median` a value is, in the metric's direction (negative: better).
double worse_by(double value, double median, Better better) {
  if (median == 0.0 || better == Better::none) {
    return 0.0;
  }
  const double delta = better == Better::higher ? median - value : value - median;
  return delta / std::abs(median);
}

RankSpread spread_of(const Row& first, const MetricResult& metric, const std::vector<Sample>& samples,
                     double threshold) {
  RankSpread s;
  s.workload = first.workload;
  s.case_label = first.case_label();
  s.allocator = first.allocator;
  s.metric = metric.name;
  s.unit = metric.unit;
  s.better = metric.better;
  s.ranks = static_cast<int>(samples.size());
  std::vector<double> values;
  for (const Sample& x : samples) {
    values.push_back(x.value);
  }
  s.median = summarize(values).median;
  const auto [lo, hi] = std::minmax_element(
      samples.begin(), samples.end(), [](const Sample& a, const Sample& b) { return a.value < b.value; });
  s.min = lo->value;
  s.min_rank = lo->rank;
  s.max = hi->value;
  s.max_rank = hi->rank;
  for (const Sample& x : samples) {
    const double worse = worse_by(x.value, s.median, s.better);
    if (worse > threshold) {
      s.stragglers.push_back({x.rank, *x.node, x.value, worse});
    }
  }
  return s;
}

}  // namespace

int count_ranks(const std::vector<Row>& rows) {
  std::set<int> ranks;
  for (const Row& row : rows) {
    ranks.insert(row.rank);
  }
  return static_cast<int>(ranks.size());
}

std::vector<RankSpread> summarize_ranks(const std::vector<Row>& rows, double threshold) {
  using Key =
      std::tuple<std::string, std::string, std::string, std::string>;  // workload case allocator metric
  std::vector<Key> order;
  std::vector<std::pair<const Row*, const MetricResult*>> firsts;
  std::vector<std::vector<Sample>> samples;
  for (const Row& row : rows) {
    if (row.verdict != Verdict::pass && row.verdict != Verdict::fail) {
      continue;
    }
    for (const MetricResult& m : row.metrics) {
      if (!std::isfinite(m.summary.median) || m.summary.n == 0) {
        continue;
      }
      const Key key{row.workload, row.case_label(), row.allocator, m.name};
      const auto it = std::find(order.begin(), order.end(), key);
      const auto index = static_cast<std::size_t>(it - order.begin());
      if (it == order.end()) {
        order.push_back(key);
        firsts.emplace_back(&row, &m);
        samples.emplace_back();
      }
      samples[index].push_back({row.rank, m.summary.median, &row.device.node});
    }
  }
  std::vector<RankSpread> spreads;
  for (std::size_t i = 0; i < order.size(); ++i) {
    spreads.push_back(spread_of(*firsts[i].first, *firsts[i].second, samples[i], threshold));
  }
  return spreads;
}

nlohmann::json rank_summary_json(const std::vector<RankSpread>& spreads, double threshold) {
  nlohmann::json cases = nlohmann::json::array();
  for (const RankSpread& s : spreads) {
    nlohmann::json stragglers = nlohmann::json::array();
    for (const Straggler& x : s.stragglers) {
      nlohmann::json named{{"rank", x.rank}, {"value", x.value}, {"worse_pct", x.worse * 100.0}};
      if (!x.node.empty()) {
        named["node"] = x.node;
      }
      stragglers.push_back(std::move(named));
    }
    cases.push_back({{"workload", s.workload},
                     {"case", s.case_label},
                     {"allocator", s.allocator},
                     {"metric", s.metric},
                     {"unit", s.unit},
                     {"better", to_string(s.better)},
                     {"ranks", s.ranks},
                     {"min", s.min},
                     {"min_rank", s.min_rank},
                     {"median", s.median},
                     {"max", s.max},
                     {"max_rank", s.max_rank},
                     {"stragglers", stragglers}});
  }
  return {{"straggler_threshold_pct", threshold * 100.0}, {"cases", cases}};
}

}  // namespace memstress
