// `memstress db prune` (prune.hpp, Note [Pruning the store]).

#include "harness/db/prune.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "harness/core/error.hpp"
#include "harness/db/summary.hpp"

namespace memstress::db {
namespace {

constexpr std::size_t kRunsAtOnce = 500;

std::vector<std::int64_t> selected_runs(Connection& c, const PruneOptions& o) {
  std::string sql = "SELECT u.id FROM runs u WHERE 1 = 1";
  if (!o.before.empty()) {
    sql += " AND u.started_at <> '' AND u.started_at < ?";
  }
  if (o.keep_runs > 0) {
    // A run some GPU keeps: among the newest keep_runs runs that measured it. Runs that measured no GPU stay.
    sql += R"sql( AND EXISTS (SELECT 1 FROM rows g WHERE g.run_id = u.id AND g.device_uuid <> '')
 AND u.id NOT IN (
  SELECT run_id FROM (
    SELECT x.run_id, ROW_NUMBER() OVER (PARTITION BY x.device_uuid ORDER BY v.started_at DESC, v.id DESC) AS n
    FROM (SELECT DISTINCT run_id, device_uuid FROM rows WHERE device_uuid <> '') x
    JOIN runs v ON v.id = x.run_id) k
  WHERE k.n <= ?))sql";
  }
  const auto s = c.prepare(sql);
  int index = 1;
  if (!o.before.empty()) {
    s->bind(index++, o.before);
  }
  if (o.keep_runs > 0) {
    s->bind(index, static_cast<std::int64_t>(o.keep_runs));
  }
  std::vector<std::int64_t> out;
  while (s->step()) {
    out.push_back(s->integer(0));
  }
  return out;
}

}  // namespace

PruneOutcome prune(Store& store, const PruneOptions& options) {
  if (options.before.empty() && options.keep_runs == 0) {
    throw InputError(fmt::format("memstress db prune: give {} DATE, {} N, or both", options.names.before,
                                 options.names.keep_runs));
  }
  Connection& c = store.connection();
  Transaction transaction(c);
  StatementCache cache(c);
  if (!c.dialect().writer_lock.empty()) {
    cache.get(std::string(c.dialect().writer_lock)).run();
  }
  PruneOutcome out;
  {
    const auto s = c.prepare("SELECT count(*) FROM runs");
    out.runs_held = s->step() ? s->integer(0) : 0;
  }
  const std::vector<std::int64_t> runs = selected_runs(c, options);
  out.runs_selected = static_cast<std::int64_t>(runs.size());
  if (!options.samples_only && !options.all && !options.dry_run && out.runs_held > 0 &&
      out.runs_selected == out.runs_held) {
    throw InputError(fmt::format(
        "memstress db prune: {} would delete every run '{}' holds ({}); nothing deleted ({} deletes them "
        "all)",
        [&] {
          std::string what;
          if (!options.before.empty()) {
            what = fmt::format("{} {}", options.names.before, options.before);
          }
          if (options.keep_runs > 0) {
            what +=
                fmt::format("{}{} {}", what.empty() ? "" : " ", options.names.keep_runs, options.keep_runs);
          }
          return what;
        }(),
        c.name(), out.runs_held, options.names.all));
  }
  std::set<std::int64_t> series, devices;
  for_each_chunk(runs, kRunsAtOnce, [&](const std::vector<std::int64_t>& chunk) {
    id_list(
        "SELECT count(*), COALESCE(sum(m.sample_count), 0) FROM rows r JOIN metrics m ON m.row_id = r.id "
        "WHERE r.run_id IN (",
        chunk, ")")
        .run(cache, [&](Statement& s) {
          out.metrics += s.integer(0);
          out.samples += s.integer(1);
        });
    if (options.dry_run) {
      return;
    }
    if (options.samples_only) {
      id_list(
          "UPDATE metrics SET samples = '[]', sample_count = 0 WHERE sample_count > 0 AND row_id IN "
          "(SELECT id FROM rows WHERE run_id IN (",
          chunk, "))")
          .run(cache);
      return;
    }
    id_list(
        "SELECT DISTINCT p.series_id FROM rows r JOIN metrics p ON p.row_id = r.id WHERE "
        "p.series_id IS NOT NULL AND r.run_id IN (",
        chunk, ")")
        .run(cache, [&](Statement& s) { series.insert(s.integer(0)); });
    id_list("SELECT DISTINCT device_id FROM latest_rows WHERE run_id IN (", chunk, ")")
        .run(cache, [&](Statement& s) { devices.insert(s.integer(0)); });
    id_list("DELETE FROM runs WHERE id IN (", chunk, ")").run(cache);
  });
  if (options.dry_run) {
    return out;  // the transaction rolls back nothing
  }
  const std::vector<std::int64_t> touched(series.begin(), series.end());
  reopen_windows(cache, touched);
  refresh_series(cache, touched);
  rebuild_latest(cache, std::vector<std::int64_t>(devices.begin(), devices.end()));
  transaction.commit();
  return out;
}

}  // namespace memstress::db
