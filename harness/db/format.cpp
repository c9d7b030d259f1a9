// The outliers as a table and as JSON (format.hpp).

#include "harness/db/format.hpp"

#include <fmt/format.h>

#include "harness/core/text_table.hpp"
#include "harness/run/format.hpp"
#include "harness/run/quantity.hpp"

namespace memstress::db {

std::string format_outliers_table(const OutlierReport& report, const OutlierOptions& options) {
  std::string out;
  if (!report.outliers.empty()) {
    // The medians in the run table's units (format_quantity: "2.16 Mops/s", "54.93 GB/s"); JSON keeps the
    // numbers as stored.
    std::vector<TableLine> lines{{"SCORE", "WORSE", "WORKLOAD", "CASE", "ALLOCATOR", "METRIC", "MEDIAN",
                                  "GROUP", "GPUS", "RANKS", "MODEL", "DRIVER", "HOST", "GPU UUID", "BUS ID"}};
    for (const Outlier& o : report.outliers) {
      lines.push_back({fmt::format("{:.1f}", o.score), fmt::format("{:.1f}%", o.worse_pct), o.workload,
                       o.case_label, o.allocator, o.metric, format_quantity(o.value, o.unit),
                       format_quantity(o.group_median, o.unit), std::to_string(o.group_gpus),
                       std::to_string(o.concurrent_ranks), o.model, o.driver, o.host, o.gpu_uuid,
                       o.pci_bus_id.empty() ? "-" : o.pci_bus_id});
    }
    out += render_table(lines);
  }
  out += fmt::format(
      "{} outlier(s) among {} GPU(s): {} group(s) judged (median and MAD: worse than {:g} spreads "
      "(scaled MAD and the GPU's standard error) and {:g}% of the median), {} group(s) of fewer than {} "
      "GPUs not judged\n",
      report.outliers.size(), report.gpus, report.groups_judged, options.threshold,
      options.threshold * options.relative_floor * 100, report.groups_too_small, options.min_gpus);
  return out;
}

nlohmann::json outliers_json(const OutlierReport& report, const OutlierOptions& options) {
  nlohmann::json list = nlohmann::json::array();
  for (const Outlier& o : report.outliers) {
    list.push_back({{"workload", o.workload},
                    {"case", o.case_label},
                    {"allocator", o.allocator},
                    {"metric", o.metric},
                    {"unit", o.unit},
                    {"better", to_string(o.better)},
                    {"model", o.model},
                    {"driver", o.driver},
                    {"host", o.host},
                    {"gpu_uuid", o.gpu_uuid},
                    {"pci_bus_id", o.pci_bus_id},
                    {"value", o.value},
                    {"group_median", o.group_median},
                    {"spread", o.spread},
                    {"runs", o.runs},
                    {"score", o.score},
                    {"worse_pct", o.worse_pct},
                    {"group_gpus", o.group_gpus},
                    {"concurrent_ranks", o.concurrent_ranks}});
  }
  nlohmann::json doc = {{"schema", "memstress.outliers/1"},
                        {"threshold", options.threshold},
                        {"min_gpus", options.min_gpus},
                        {"relative_floor", options.relative_floor},
                        {"gpus", report.gpus},
                        {"groups_judged", report.groups_judged},
                        {"groups_too_small", report.groups_too_small},
                        {"outliers", std::move(list)}};
  if (options.keep_groups) {
    nlohmann::json groups = nlohmann::json::array();
    for (const GroupValues& g : report.groups) {
      nlohmann::json gpus = nlohmann::json::array();
      for (const GroupValues::Gpu& gpu : g.gpus) {
        gpus.push_back({{"gpu_uuid", gpu.uuid},
                        {"host", gpu.host},
                        {"pci_bus_id", gpu.pci_bus_id},
                        {"value", gpu.value},
                        {"runs", gpu.runs},
                        {"limit", gpu.limit}});
      }
      groups.push_back({{"workload", g.workload},
                        {"case", g.case_label},
                        {"allocator", g.allocator},
                        {"metric", g.metric},
                        {"unit", g.unit},
                        {"better", to_string(g.better)},
                        {"model", g.model},
                        {"driver", g.driver},
                        {"concurrent_ranks", g.concurrent_ranks},
                        {"median", g.median},
                        {"spread", g.spread},
                        {"run_spread", g.run_spread},
                        {"gpus", std::move(gpus)}});
    }
    doc["groups"] = std::move(groups);
  }
  return doc;
}

}  // namespace memstress::db
