// The store's newest rows, exported (export.hpp): each GPU's newest row of each case as latest_rows keeps it
// (Note [Summaries kept at ingest]), so what an export reads is the fleet, not its history.

#include "harness/db/export.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "harness/run/openmetrics.hpp"

namespace memstress::db {

std::string export_openmetrics(Store& store, const std::string& since) {
  std::string out;
  export_openmetrics(store, {since, ""}, [&](std::string_view piece) { out += piece; });
  return out;
}

void export_openmetrics(Store& store, const ExportFilter& filter,
                        const std::function<void(std::string_view)>& write) {
  Connection& c = store.connection();
  // Of one host, from its GPUs (index devices_host) to their rows (latest_rows' key starts with the GPU).
  const std::string where =
      filter.host.empty() ? "(? = '' OR l.started_at >= ?)" : "(? = '' OR l.started_at >= ?) AND d.host = ?";
  const auto rows = c.prepare(R"sql(
SELECT r.id, d.uuid, r.device_name, r.rank, r.workload, r.case_label, r.allocator, r.verdict, r.checked,
       r.errors, COALESCE(k.host, ''), COALESCE(k.driver, ''), u.started_at, u.memstress_version, u.id
FROM devices d
JOIN latest_rows l ON l.device_id = d.id
JOIN rows r ON r.id = l.row_id
JOIN runs u ON u.id = l.run_id
LEFT JOIN ranks k ON k.run_id = l.run_id AND k.rank = COALESCE(r.rank, 0)
WHERE )sql" + where);
  rows->bind(1, filter.since).bind(2, filter.since);
  if (!filter.host.empty()) {
    rows->bind(3, filter.host);
  }
  struct Kept {
    ExportedRow row;
    std::string started_at;
    std::int64_t run_id = 0, row_id = 0;
  };
  std::vector<Kept> kept;
  std::unordered_map<std::int64_t, std::size_t> by_id;  // row id -> position in `kept`
  std::map<std::string, ExportedRun> runs;              // the newest per host
  while (rows->step()) {
    Kept k;
    k.row_id = rows->integer(0);
    ExportedRow& row = k.row;
    row.gpu_uuid = rows->text(1);
    row.model = rows->text(2);
    if (!rows->is_null(3)) {
      row.rank = static_cast<int>(rows->integer(3));
    }
    row.workload = rows->text(4);
    row.case_label = rows->text(5);
    row.allocator = rows->text(6);
    row.verdict = verdict_from_string(rows->text(7)).value_or(Verdict::error);
    row.checked = static_cast<std::uint64_t>(std::max<std::int64_t>(0, rows->integer(8)));
    row.errors = static_cast<std::uint64_t>(std::max<std::int64_t>(0, rows->integer(9)));
    row.host = rows->text(10);
    k.started_at = rows->text(12);
    k.run_id = rows->integer(14);
    auto [run, added] = runs.try_emplace(row.host);
    if (added || k.started_at > run->second.started_at) {
      run->second = {row.host, rows->text(11), rows->text(13), k.started_at};
    }
    by_id.emplace(k.row_id, kept.size());
    kept.push_back(std::move(k));
  }
  // The kept rows' metrics (index metrics_row), each row's in the order they were written.
  const auto metrics = c.prepare(R"sql(
SELECT m.row_id, m.id, m.name, m.unit, m.better, m.n, m.median, m.p10, m.p90
FROM devices d
JOIN latest_rows l ON l.device_id = d.id
JOIN metrics m ON m.row_id = l.row_id
WHERE )sql" + where);
  metrics->bind(1, filter.since).bind(2, filter.since);
  if (!filter.host.empty()) {
    metrics->bind(3, filter.host);
  }
  std::vector<std::vector<std::pair<std::int64_t, MetricResult>>> of_row(kept.size());
  while (metrics->step()) {
    const auto at = by_id.find(metrics->integer(0));
    if (at == by_id.end()) {
      continue;
    }
    MetricResult m;
    m.name = metrics->text(2);
    m.unit = metrics->text(3);
    m.better = better_from_string(metrics->text_view(4)).value_or(Better::none);
    m.summary.n = static_cast<std::size_t>(std::max<std::int64_t>(0, metrics->integer(5)));
    m.summary.median = metrics->real(6);
    m.summary.p10 = metrics->real(7);
    m.summary.p90 = metrics->real(8);
    of_row[at->second].emplace_back(metrics->integer(1), std::move(m));
  }
  for (std::size_t i = 0; i < kept.size(); ++i) {
    auto& list = of_row[i];
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [id, m] : list) {
      kept[i].row.metrics.push_back(std::move(m));
    }
  }
  // Newest run first, each run's rows in their order (as the rows were read before).
  std::sort(kept.begin(), kept.end(), [](const Kept& a, const Kept& b) {
    return std::tie(b.started_at, b.run_id, a.row_id) < std::tie(a.started_at, a.run_id, b.row_id);
  });
  std::vector<ExportedRow> out;
  out.reserve(kept.size());
  for (Kept& k : kept) {
    out.push_back(std::move(k.row));
  }
  std::vector<ExportedRun> run_list;
  run_list.reserve(runs.size());
  for (auto& [host, run] : runs) {
    run_list.push_back(std::move(run));
  }
  write_openmetrics(run_list, out, write);
}

}  // namespace memstress::db
