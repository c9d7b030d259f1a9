#pragma once

// The store's tests of summaries, upgrades and prunes: runs made from the six-node fleet's files
// (tests/data/fleet), and what a store answers, written as text so that two stores can be compared whole.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/db/export.hpp"
#include "harness/db/store.hpp"
#include "tests/unit/temp_dir.hpp"

namespace memstress::db {

inline const std::filesystem::path kFleet = std::filesystem::path(MEMSTRESS_SOURCE_DIR) / "tests/data/fleet";

// tests/data/fleet/<node>.json as another run of that node: started at `started_at` (its command line says
// so too: another run key), every metric's median, percentiles and samples times `factor`.
inline std::filesystem::path fleet_run(const std::filesystem::path& dir, const std::string& node,
                                       const std::string& started_at, double factor) {
  nlohmann::json doc = nlohmann::json::parse(memstress::testing::slurp(kFleet / (node + ".json")));
  doc["started_at"] = started_at;
  doc["ended_at"] = started_at;
  doc["argv"].push_back("--tag=" + started_at);
  for (auto& row : doc["rows"]) {
    row["started_at"] = started_at;
    for (auto& [name, m] : row["metrics"].items()) {
      for (const char* field : {"median", "p10", "p90", "p99", "min", "max", "mean"}) {
        if (m.contains(field) && m[field].is_number()) {
          m[field] = m[field].get<double>() * factor;
        }
      }
      for (auto& s : m["samples"]) {
        s = s.get<double>() * factor;
      }
    }
  }
  std::filesystem::path out = dir / fmt::format("{}-{}.json", node, started_at.substr(0, 19));
  std::ofstream(out) << doc.dump();
  return out;
}

// Each GPU's summary of each measurement as a store gives them, as text (sorted).
inline std::string summaries(Store& store, const SeriesFilter& filter = {}) {
  std::vector<std::string> lines;
  store.for_each_series(filter, [&](const Measurement& m, const Device& d, const GpuSummary& s) {
    lines.push_back(
        fmt::format("{} | {} | {} | {} | {} | {} | {} | {} | {} | {} {} {} | runs {} median {:.9g} "
                    "scatter {:.9g}",
                    m.workload, m.case_label, m.allocator, m.metric, m.unit, to_string(m.better), m.model,
                    m.driver, m.concurrent_ranks, d.uuid, d.host, d.pci_bus_id, s.runs, s.median,
                    std::isnan(s.scatter) ? -1.0 : s.scatter));
  });
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const std::string& line : lines) {
    out += line + "\n";
  }
  return out;
}

// Everything a store's queries read, as text: its summaries and its export.
inline std::string answers(Store& store, const SeriesFilter& filter = {}) {
  return summaries(store, filter) + export_openmetrics(store, filter.since);
}

}  // namespace memstress::db
