// The migrations, oldest first. Never edit one that has shipped: add the next. The text takes the
// dialect's types ({id}, {real}, {int}) so that the same migrations build the PostgreSQL schema.

#include "harness/db/schema.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <string_view>

#include "harness/core/text_table.hpp"
#include "harness/db/summary.hpp"
#include "harness/results/row.hpp"

namespace memstress::db {
namespace {

// 1: runs (with their environment facts, a JSON array of [label, value] pairs in the file's order, the
// facts `memstress compare` compares), the files that gave them, each rank's identity, rows, metrics and
// their samples.
//
// A run is keyed by `run_key` (store.cpp: the same run's .json and .jsonl share it), a file by its
// content's SHA-256. Rows reference their run, metrics their row, all ON DELETE CASCADE, so replacing a
// run's content (its .jsonl first, its .json later) is one DELETE of its rows. A metric's samples (its
// repetitions, kept for reading back, never queried one by one) are one JSON array in their metric's row
// (null for a value that is not finite): a row each would be most of an ingest's writes, five to a hundred
// per metric, and the fleet store ingests thousands of files at a time (scripts/dev/fleet-bench).
// A row's concurrent_ranks: how many ranks ran its case at the same time (the job's ranks, or 1 for a
// workload the run took --in-turn): GPUs measured alone and GPUs sharing a host are not compared.
constexpr std::string_view kV1 = R"sql(
CREATE TABLE runs (
  id {id},
  run_key TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  format TEXT NOT NULL,
  status TEXT NOT NULL,
  started_at TEXT NOT NULL,
  row_count {int} NOT NULL,
  source_path TEXT NOT NULL,
  source_sha256 TEXT NOT NULL,
  memstress_version TEXT NOT NULL DEFAULT '',
  environment TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE files (
  sha256 TEXT PRIMARY KEY,
  path TEXT NOT NULL,
  run_id {int} NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  ingested_at TEXT NOT NULL
);
CREATE TABLE ranks (
  run_id {int} NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  rank {int} NOT NULL,
  host TEXT NOT NULL,
  driver TEXT NOT NULL,
  cuda_driver TEXT NOT NULL,
  cuda_runtime TEXT NOT NULL,
  nccl TEXT NOT NULL,
  device_uuid TEXT NOT NULL,
  PRIMARY KEY (run_id, rank)
);
CREATE TABLE gpus (
  run_id {int} NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  rank {int} NOT NULL,
  uuid TEXT NOT NULL,
  name TEXT NOT NULL,
  pci_bus_id TEXT NOT NULL,
  serial TEXT NOT NULL,
  PRIMARY KEY (run_id, rank, uuid)
);
CREATE INDEX gpus_uuid ON gpus (uuid);
CREATE TABLE rows (
  id {id},
  run_id {int} NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  position {int} NOT NULL,
  workload TEXT NOT NULL,
  case_label TEXT NOT NULL,
  params TEXT NOT NULL,
  allocator TEXT NOT NULL,
  rank {int},
  concurrent_ranks {int} NOT NULL,
  device_name TEXT NOT NULL,
  device_uuid TEXT NOT NULL,
  verdict TEXT NOT NULL,
  reason TEXT NOT NULL,
  checked {int} NOT NULL,
  errors {int} NOT NULL
);
CREATE INDEX rows_run ON rows (run_id);
CREATE INDEX rows_device ON rows (device_uuid);
CREATE TABLE metrics (
  id {id},
  row_id {int} NOT NULL REFERENCES rows (id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  unit TEXT NOT NULL,
  better TEXT NOT NULL,
  n {int} NOT NULL,
  median {real},
  p10 {real},
  p90 {real},
  min {real},
  max {real},
  mean {real},
  stddev {real},
  cv {real},
  sample_count {int} NOT NULL,
  samples TEXT NOT NULL
);
CREATE INDEX metrics_row ON metrics (row_id);
CREATE INDEX metrics_name ON metrics (name);
)sql";

// 2: what the queries read, kept up to date at ingest so that they cost what the fleet is, not all it has
// held (Note [Summaries kept at ingest] in harness/db/summary.hpp). A measurement (what a group of GPUs is
// compared on: Note [Fleet outliers: median and MAD]) is a row of `measurements`; each GPU a row of
// `devices`, with where it was last seen; a `series` is one GPU's medians of one measurement, summarised over
// its newest runs; a metric that is one of its points names it (series_id) and its run's start. `latest_rows`
// is each GPU's newest row of each case, what `db export` writes. The indexes are those the queries and the
// deletions of `db prune` (cascades on run_id) look up by; metrics_name was read by none.
constexpr std::string_view kV2 = R"sql(
CREATE TABLE measurements (
  id {id},
  workload TEXT NOT NULL,
  case_label TEXT NOT NULL,
  allocator TEXT NOT NULL,
  metric TEXT NOT NULL,
  unit TEXT NOT NULL,
  better TEXT NOT NULL,
  model TEXT NOT NULL,
  driver TEXT NOT NULL,
  concurrent_ranks {int} NOT NULL,
  UNIQUE (workload, case_label, allocator, metric, unit, better, model, driver, concurrent_ranks)
);
CREATE TABLE devices (
  id {id},
  uuid TEXT NOT NULL UNIQUE,
  host TEXT NOT NULL,
  pci_bus_id TEXT NOT NULL,
  seen_at TEXT NOT NULL
);
CREATE INDEX devices_host ON devices (host);
CREATE TABLE series (
  id {id},
  measurement_id {int} NOT NULL REFERENCES measurements (id),
  device_id {int} NOT NULL REFERENCES devices (id),
  runs {int} NOT NULL,
  median {real},
  scatter {real},
  window_from TEXT NOT NULL,
  UNIQUE (measurement_id, device_id)
);
CREATE INDEX series_device ON series (device_id);
ALTER TABLE metrics ADD COLUMN series_id {int};
ALTER TABLE metrics ADD COLUMN started_at TEXT;
CREATE INDEX metrics_series ON metrics (series_id, started_at, median);
DROP INDEX metrics_name;
CREATE TABLE latest_rows (
  device_id {int} NOT NULL REFERENCES devices (id),
  workload TEXT NOT NULL,
  case_label TEXT NOT NULL,
  allocator TEXT NOT NULL,
  row_id {int} NOT NULL REFERENCES rows (id) ON DELETE CASCADE,
  run_id {int} NOT NULL,
  started_at TEXT NOT NULL,
  PRIMARY KEY (device_id, workload, case_label, allocator)
);
CREATE INDEX latest_rows_row ON latest_rows (row_id);
CREATE INDEX files_run ON files (run_id);
CREATE INDEX ranks_host ON ranks (host);
CREATE INDEX runs_started ON runs (started_at);
)sql";

// What a migration does past its SQL: filling what it made from what the store held (schema v2's summaries,
// harness/db/summary.hpp). Runs in the migration's transaction.
using Backfill = void (*)(Connection&);
struct Migration {
  std::string_view sql;
  Backfill backfill = nullptr;
};

const std::array<Migration, 2> kMigrations{Migration{kV1}, Migration{kV2, &backfill_summaries}};

bool has_version_table(Connection& connection) {
  const auto s = connection.prepare(connection.dialect().has_table);
  s->bind(1, "schema_version");
  return s->step() && s->integer(0) > 0;
}

}  // namespace

int latest_schema_version() noexcept {
  return static_cast<int>(kMigrations.size());
}

std::int64_t schema_version(Connection& connection) {
  if (!has_version_table(connection)) {
    return 0;
  }
  // Every row read as text and parsed whole: a version is a whole number from 1 up, and anything else there
  // (a text, a fraction, 0, a number past 64 bits) was not written by memstress (Note [Schema versions]).
  const auto s = connection.prepare("SELECT version FROM schema_version");
  std::int64_t at = 0;
  while (s->step()) {
    const std::string_view text = s->text_view(0);
    std::int64_t version = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), version);
    if (s->is_null(0) || ec != std::errc() || end != text.data() + text.size() || version < 1) {
      throw DbError(fmt::format(
          "database '{}': its schema_version table holds '{}', not a schema version memstress writes (a "
          "whole number from 1 up): not a memstress store, or a damaged one",
          connection.name(), printable(text, 40)));
    }
    at = std::max(at, version);
  }
  return at;
}

void check_not_newer(Connection& connection, std::int64_t version) {
  if (version > latest_schema_version()) {
    throw DbError(fmt::format(
        "database '{}': schema version {} was made by a newer memstress (this one knows up to {}); use "
        "that memstress, or another database",
        connection.name(), version, latest_schema_version()));
  }
}

void check_current(Connection& connection) {
  const std::int64_t at = schema_version(connection);
  check_not_newer(connection, at);
  if (at == 0) {
    throw DbError(fmt::format(
        "database '{}': not a memstress store (it has no schema_version table, or an empty one); memstress "
        "db ingest makes one",
        connection.name()));
  }
  if (at < latest_schema_version()) {
    throw DbError(fmt::format(
        "database '{}': schema version {} was made by an older memstress (this one reads {}); memstress db "
        "ingest with this memstress upgrades it",
        connection.name(), at, latest_schema_version()));
  }
}

int migrate(Connection& connection) {
  return migrate(connection, latest_schema_version());
}

int migrate(Connection& connection, std::int64_t up_to) {
  up_to = std::min<std::int64_t>(up_to, latest_schema_version());
  const std::int64_t seen = schema_version(connection);
  check_not_newer(connection, seen);
  if (seen >= up_to) {
    return 0;  // the common case, without taking the writer lock
  }
  const Dialect& d = connection.dialect();
  int ran = 0;
  for (int version = 1; version <= up_to; ++version) {
    // Several processes may open a new store at once (8 ingests started together): each takes the writer
    // lock (SQLite's BEGIN IMMEDIATE, PostgreSQL's advisory lock) and reads the version again under it; the
    // first applies the migration, the others find it done.
    Transaction transaction(connection);
    if (!d.writer_lock.empty()) {
      connection.prepare(d.writer_lock)->run();
    }
    const std::int64_t at = schema_version(connection);
    check_not_newer(connection, at);
    if (at >= version) {
      continue;  // done before, or by the other process (the transaction rolls back nothing)
    }
    if (version == 1) {
      connection.exec(fmt::format(
          "CREATE TABLE IF NOT EXISTS schema_version (version {} PRIMARY KEY, applied_at TEXT NOT NULL)",
          d.int_type));
    }
    const Migration& m = kMigrations[static_cast<std::size_t>(version - 1)];
    connection.exec(fmt::format(fmt::runtime(m.sql), fmt::arg("id", d.id_column),
                                fmt::arg("real", d.real_type), fmt::arg("int", d.int_type)));
    if (m.backfill != nullptr) {
      m.backfill(connection);
    }
    const auto s = connection.prepare("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)");
    s->bind(1, version).bind(2, utc_now_iso8601()).run();
    transaction.commit();
    ++ran;
  }
  return ran;
}

}  // namespace memstress::db
