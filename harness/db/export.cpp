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
  // Each row with its labels made at once and its metrics' statistics only (LabelledRows): at 100,000 GPUs
  // the rows as objects were most of a gigabyte.
  struct Kept {
    std::string labels;
    Verdict verdict = Verdict::pass;
    std::uint64_t checked = 0, errors = 0;
    std::string started_at;
    std::int64_t run_id = 0, row_id = 0;
    std::vector<LabelledRows::Metric> metrics;
  };
  std::vector<Kept> kept;
  std::unordered_map<std::int64_t, std::size_t> by_id;  // row id -> position in `kept`
  std::map<std::string, ExportedRun> runs;              // the newest per host
  ExportedRow row;                                      // reused: what its labels are made from
  while (rows->step()) {
    Kept k;
    k.row_id = rows->integer(0);
    row.gpu_uuid = rows->text_view(1);
    row.model = rows->text_view(2);
    row.rank.reset();
    if (!rows->is_null(3)) {
      row.rank = static_cast<int>(rows->integer(3));
    }
    row.workload = rows->text_view(4);
    row.case_label = rows->text_view(5);
    row.allocator = rows->text_view(6);
    row.host = rows->text_view(10);
    k.labels = case_labels(row);
    k.verdict = verdict_from_string(rows->text(7)).value_or(Verdict::error);
    k.checked = static_cast<std::uint64_t>(std::max<std::int64_t>(0, rows->integer(8)));
    k.errors = static_cast<std::uint64_t>(std::max<std::int64_t>(0, rows->integer(9)));
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
SELECT m.row_id, m.id, m.name, m.unit, m.n, m.median, m.p10, m.p90
FROM devices d
JOIN latest_rows l ON l.device_id = d.id
JOIN metrics m ON m.row_id = l.row_id
WHERE )sql" + where);
  metrics->bind(1, filter.since).bind(2, filter.since);
  if (!filter.host.empty()) {
    metrics->bind(3, filter.host);
  }
  LabelledRows labelled;
  while (metrics->step()) {
    const auto at = by_id.find(metrics->integer(0));
    if (at == by_id.end()) {
      continue;
    }
    kept[at->second].metrics.push_back(
        {labelled.metric_label(metrics->text_view(2), metrics->text_view(3)), metrics->integer(1),
         static_cast<std::size_t>(std::max<std::int64_t>(0, metrics->integer(4))), metrics->real(5),
         metrics->real(6), metrics->real(7)});
  }
  const auto by_metric_id = [](const LabelledRows::Metric& a, const LabelledRows::Metric& b) {
    return a.id < b.id;
  };
  for (Kept& k : kept) {
    if (!std::is_sorted(k.metrics.begin(), k.metrics.end(), by_metric_id)) {
      std::sort(k.metrics.begin(), k.metrics.end(), by_metric_id);
    }
  }
  // Newest run first, each run's rows in their order (as the rows were read before).
  std::sort(kept.begin(), kept.end(), [](const Kept& a, const Kept& b) {
    return std::tie(b.started_at, b.run_id, a.row_id) < std::tie(a.started_at, a.run_id, b.row_id);
  });
  for (Kept& k : kept) {
    labelled.add(std::move(k.labels), k.verdict, k.checked, k.errors, std::move(k.metrics));
  }
  kept = {};
  std::vector<ExportedRun> run_list;
  run_list.reserve(runs.size());
  for (auto& [host, run] : runs) {
    run_list.push_back(std::move(run));
  }
  write_openmetrics(run_list, labelled, write);
}

}  // namespace memstress::db
