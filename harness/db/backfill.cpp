// Schema version 2's migration past its SQL (summary.hpp): the summaries of a store that version 1 wrote,
// made from what it holds. Read in chunks of metrics by id, each chunk a statement of its own, so that the
// updates between them never change a table a statement is still reading.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "harness/db/summary.hpp"

namespace memstress::db {
namespace {

constexpr int kMetricsAtOnce = 20'000;

struct Seen {
  std::string host, pci_bus_id, started_at;
};

// Every GPU the rows name, as last seen (the newest run's host and PCI bus id), into `devices`; their ids.
std::unordered_map<std::string, std::int64_t> add_devices(StatementCache& cache) {
  std::map<std::string, Seen> seen;
  Statement& s = cache.get(R"sql(
SELECT r.device_uuid, COALESCE(k.host, ''), COALESCE(g.pci_bus_id, ''), u.started_at
FROM rows r
JOIN runs u ON u.id = r.run_id
LEFT JOIN ranks k ON k.run_id = r.run_id AND k.rank = COALESCE(r.rank, 0)
LEFT JOIN gpus g ON g.run_id = r.run_id AND g.rank = COALESCE(r.rank, 0) AND g.uuid = r.device_uuid
WHERE r.device_uuid <> '')sql");
  while (s.step()) {
    auto [at, added] = seen.try_emplace(s.text(0));
    if (added || s.text_view(3) >= at->second.started_at) {
      at->second = {s.text(1), s.text(2), s.text(3)};
    }
  }
  s.reset();
  ManyRows insert("INSERT INTO devices (uuid, host, pci_bus_id, seen_at) VALUES", "(?, ?, ?, ?)", 4,
                  "RETURNING id, uuid");
  for (const auto& [uuid, where] : seen) {
    insert.add(uuid).add(where.host).add(where.pci_bus_id).add(where.started_at);
  }
  std::unordered_map<std::string, std::int64_t> ids;
  insert.run(cache, [&](Statement& r) { ids.emplace(r.text(1), r.integer(0)); });
  return ids;
}

}  // namespace

void backfill_summaries(Connection& connection) {
  StatementCache cache(connection);
  const std::unordered_map<std::string, std::int64_t> devices = add_devices(cache);
  std::unordered_map<std::string, std::int64_t> measurements;  // key -> id
  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> series;
  Statement& insert_measurement = cache.get(
      "INSERT INTO measurements (workload, case_label, allocator, metric, unit, better, model, driver, "
      "concurrent_ranks) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id");
  Statement& insert_series = cache.get(
      "INSERT INTO series (measurement_id, device_id, runs, window_from) VALUES (?, ?, 0, '') RETURNING id");
  // The observations of version 1 (Store::for_each_observation as it read them): a finite median of a metric
  // with a better direction, of a row that passed or failed, on a GPU the row names.
  Statement& chunk = cache.get(R"sql(
SELECT m.id, r.workload, r.case_label, r.allocator, m.name, m.unit, m.better, r.device_name,
       COALESCE(k.driver, ''), r.concurrent_ranks, r.device_uuid, u.started_at, m.median
FROM metrics m
JOIN rows r ON m.row_id = r.id
JOIN runs u ON u.id = r.run_id
LEFT JOIN ranks k ON k.run_id = r.run_id AND k.rank = COALESCE(r.rank, 0)
WHERE m.id > ? AND m.better IN ('higher', 'lower') AND m.median IS NOT NULL AND r.device_uuid <> ''
  AND r.verdict IN ('pass', 'fail')
ORDER BY m.id LIMIT ?)sql");
  ManyRows points("UPDATE metrics SET series_id = v.column2, started_at = v.column3 FROM (VALUES",
                  "(CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS TEXT))", 3,
                  ") AS v WHERE metrics.id = v.column1");
  std::int64_t after = 0;
  for (;;) {
    chunk.reset();
    chunk.bind(1, after).bind(2, kMetricsAtOnce);
    int read = 0;
    while (chunk.step()) {
      ++read;
      after = chunk.integer(0);
      if (!std::isfinite(chunk.real(12))) {
        continue;
      }
      const auto ranks = std::max<std::int64_t>(1, chunk.integer(9));
      std::string key;
      for (const int column : {1, 2, 3, 4, 5, 6, 7, 8}) {
        key += chunk.text_view(column);
        key += '\x1f';
      }
      key += std::to_string(ranks);
      auto [m, new_measurement] = measurements.try_emplace(key, 0);
      if (new_measurement) {
        insert_measurement.reset();
        for (const int column : {1, 2, 3, 4, 5, 6, 7, 8}) {
          insert_measurement.bind(column, chunk.text_view(column));
        }
        insert_measurement.bind(9, ranks);
        insert_measurement.step();
        m->second = insert_measurement.integer(0);
        insert_measurement.reset();
      }
      const auto device = devices.find(chunk.text(10));
      if (device == devices.end()) {
        continue;  // add_devices read every GPU the rows name
      }
      auto [s, new_series] = series.try_emplace({m->second, device->second}, 0);
      if (new_series) {
        insert_series.reset();
        insert_series.bind(1, m->second).bind(2, device->second);
        insert_series.step();
        s->second = insert_series.integer(0);
        insert_series.reset();
      }
      points.add(chunk.integer(0)).add(s->second).own(chunk.text(11));
    }
    chunk.reset();
    points.run(cache);
    if (read < kMetricsAtOnce) {
      break;
    }
  }
  std::vector<std::int64_t> ids;
  ids.reserve(devices.size());
  for (const auto& [uuid, id] : devices) {
    ids.push_back(id);
  }
  rebuild_latest(cache, ids);
  ids.clear();
  for (const auto& [key, id] : series) {
    ids.push_back(id);
  }
  refresh_series(cache, ids);
}

}  // namespace memstress::db
