// The summaries kept at ingest (summary.hpp, Note [Summaries kept at ingest]).

#include "harness/db/summary.hpp"

#include <algorithm>
#include <unordered_map>

#include "harness/db/outliers.hpp"

namespace memstress::db {
namespace {

// Ids a statement takes at once in an IN list (a few round trips for a batch's thousands of series).
constexpr std::size_t kIdsAtOnce = 500;

}  // namespace

GpuSummary summarize_window(std::vector<SeriesPoint>& points, std::string& window_from) {
  std::sort(points.begin(), points.end(), [](const SeriesPoint& a, const SeriesPoint& b) {
    return a.started_at != b.started_at ? a.started_at > b.started_at : a.id > b.id;
  });
  if (points.size() > kSeriesWindow) {
    points.resize(kSeriesWindow);
  }
  window_from = points.size() == kSeriesWindow ? points.back().started_at : std::string();
  std::vector<double> medians;
  medians.reserve(points.size());
  for (const SeriesPoint& p : points) {
    medians.push_back(p.median);
  }
  return summarize_runs(medians);
}

void refresh_series(StatementCache& cache, const std::vector<std::int64_t>& ids) {
  for_each_chunk(ids, kIdsAtOnce, [&](const std::vector<std::int64_t>& chunk) {
    std::unordered_map<std::int64_t, std::vector<SeriesPoint>> points;
    for (const std::int64_t id : chunk) {
      points[id];
    }
    // The ids as a table the join starts from: given `s.id IN (500 ids)`, PostgreSQL scanned every series
    // (a seq scan filtered by the list), most of an ingest's time on its server.
    ManyRows read(
        "SELECT s.id, p.started_at, p.id, p.median FROM (VALUES", "(CAST(? AS BIGINT))", 1,
        ") AS v JOIN series s ON s.id = v.column1 JOIN metrics p ON p.series_id = s.id AND p.started_at "
        ">= s.window_from");
    for (const std::int64_t id : chunk) {
      read.add(id);
    }
    read.run(cache, [&](Statement& s) {
      points[s.integer(0)].push_back({s.text(1), s.integer(2), s.real(3)});
    });
    ManyRows update(
        "UPDATE series SET runs = v.column2, median = v.column3, scatter = v.column4, window_from = "
        "v.column5 "
        "FROM (VALUES",
        "(CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS DOUBLE PRECISION), CAST(? AS DOUBLE PRECISION), "
        "CAST(? AS TEXT))",
        5, ") AS v WHERE series.id = v.column1");
    std::vector<std::int64_t> empty;
    for (auto& [id, window] : points) {
      if (window.empty()) {
        empty.push_back(id);
        continue;
      }
      std::string from;
      const GpuSummary summary = summarize_window(window, from);
      update.add(id).add(summary.runs).add(summary.median).add(summary.scatter).own(std::move(from));
    }
    update.run(cache);
    if (!empty.empty()) {
      id_list("DELETE FROM series WHERE id IN (", empty, ")").run(cache);
    }
  });
}

void reopen_windows(StatementCache& cache, const std::vector<std::int64_t>& ids) {
  for_each_chunk(ids, kIdsAtOnce, [&](const std::vector<std::int64_t>& chunk) {
    id_list("UPDATE series SET window_from = '' WHERE id IN (", chunk, ")").run(cache);
  });
}

void rebuild_latest(StatementCache& cache, const std::vector<std::int64_t>& device_ids) {
  for_each_chunk(device_ids, kIdsAtOnce, [&](const std::vector<std::int64_t>& chunk) {
    id_list("DELETE FROM latest_rows WHERE device_id IN (", chunk, ")").run(cache);
    id_list(
        R"sql(INSERT INTO latest_rows (device_id, workload, case_label, allocator, row_id, run_id, started_at)
SELECT device_id, workload, case_label, allocator, row_id, run_id, started_at FROM (
  SELECT d.id AS device_id, r.workload, r.case_label, r.allocator, r.id AS row_id, r.run_id, u.started_at,
         ROW_NUMBER() OVER (PARTITION BY d.id, r.workload, r.case_label, r.allocator
                            ORDER BY u.started_at DESC, u.id DESC, r.id) AS n
  FROM devices d JOIN rows r ON r.device_uuid = d.uuid JOIN runs u ON u.id = r.run_id
  WHERE d.id IN ()sql",
        chunk, ")) x WHERE n = 1")
        .run(cache);
  });
}

}  // namespace memstress::db
