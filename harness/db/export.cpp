// The store's newest rows, exported (export.hpp).

#include "harness/db/export.hpp"

#include <map>
#include <set>
#include <tuple>

#include "harness/run/openmetrics.hpp"

namespace memstress::db {

std::string export_openmetrics(Store& store, const std::string& since) {
  Connection& c = store.connection();
  // Newest run first, so the first row seen of each (GPU, workload, case, allocator) is its latest.
  const auto rows = c.prepare(R"sql(
SELECT r.id, r.device_uuid, r.device_name, r.rank, r.workload, r.case_label, r.allocator, r.verdict,
       r.checked, r.errors, COALESCE(k.host, ''), COALESCE(k.driver, ''), u.started_at,
       u.memstress_version
FROM rows r
JOIN runs u ON r.run_id = u.id
LEFT JOIN ranks k ON k.run_id = r.run_id AND k.rank = COALESCE(r.rank, 0)
WHERE r.device_uuid <> '' AND (? = '' OR u.started_at >= ?)
ORDER BY u.started_at DESC, u.id DESC, r.id)sql");
  rows->bind(1, since).bind(2, since);
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::size_t> seen;
  std::map<std::int64_t, std::size_t> by_id;  // row id -> position in `out`
  std::vector<ExportedRow> out;
  std::map<std::string, ExportedRun> runs;  // the newest per host
  while (rows->step()) {
    const std::int64_t id = rows->integer(0);
    const std::string host = rows->text(10);
    if (!runs.contains(host)) {
      runs[host] = {host, rows->text(11), rows->text(13), rows->text(12)};
    }
    if (!seen.emplace(std::tuple(rows->text(1), rows->text(4), rows->text(5), rows->text(6)), out.size())
             .second) {
      continue;
    }
    ExportedRow row;
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
    row.host = host;
    by_id.emplace(id, out.size());
    out.push_back(std::move(row));
  }
  // The kept rows' metrics only (a GPU's newest rows: a few per GPU), each by its row (index metrics_row).
  const auto metrics =
      c.prepare("SELECT name, unit, better, n, median, p10, p90 FROM metrics WHERE row_id = ? ORDER BY id");
  for (const auto& [row_id, at] : by_id) {
    metrics->bind(1, row_id);
    while (metrics->step()) {
      MetricResult m;
      m.name = metrics->text(0);
      m.unit = metrics->text(1);
      m.better = better_from_string(metrics->text(2)).value_or(Better::none);
      m.summary.n = static_cast<std::size_t>(std::max<std::int64_t>(0, metrics->integer(3)));
      m.summary.median = metrics->real(4);
      m.summary.p10 = metrics->real(5);
      m.summary.p90 = metrics->real(6);
      out[at].metrics.push_back(std::move(m));
    }
    metrics->reset();
  }
  std::vector<ExportedRun> run_list;
  for (auto& [host, run] : runs) {
    run_list.push_back(std::move(run));
  }
  return openmetrics_text(run_list, out);
}

}  // namespace memstress::db
