// The migrations, oldest first. Never edit one that has shipped: add the next. The text takes the
// dialect's types ({id}, {real}, {int}) so that the same migrations build the PostgreSQL schema.

#include "harness/db/schema.hpp"

#include <fmt/format.h>

#include <array>
#include <string_view>

#include "harness/run/result.hpp"

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
// per metric, and the fleet store ingests thousands of files at a time (scripts/fleet-bench).
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

constexpr std::array<std::string_view, 1> kMigrations{kV1};

bool has_version_table(Connection& connection) {
  const auto s = connection.prepare(connection.dialect().has_table);
  s->bind(1, "schema_version");
  return s->step() && s->integer(0) > 0;
}

}  // namespace

int latest_schema_version() noexcept {
  return static_cast<int>(kMigrations.size());
}

int schema_version(Connection& connection) {
  if (!has_version_table(connection)) {
    return 0;
  }
  const auto s = connection.prepare("SELECT max(version) FROM schema_version");
  return s->step() && !s->is_null(0) ? static_cast<int>(s->integer(0)) : 0;
}

int migrate(Connection& connection) {
  const int at = schema_version(connection);
  if (at > latest_schema_version()) {
    throw DbError(fmt::format(
        "database '{}': schema version {} was written by a newer memstress (this one knows up to {}); "
        "use that memstress, or another --db",
        connection.name(), at, latest_schema_version()));
  }
  const Dialect& d = connection.dialect();
  for (int version = at + 1; version <= latest_schema_version(); ++version) {
    Transaction transaction(connection);
    if (!d.writer_lock.empty()) {
      connection.prepare(d.writer_lock)->run();  // two processes migrating a new store take turns
      if (schema_version(connection) >= version) {
        continue;  // the other did it (the transaction rolls back nothing)
      }
    }
    if (version == 1) {
      connection.exec(fmt::format(
          "CREATE TABLE schema_version (version {} PRIMARY KEY, applied_at TEXT NOT NULL)", d.int_type));
    }
    connection.exec(fmt::format(fmt::runtime(kMigrations[static_cast<std::size_t>(version - 1)]),
                                fmt::arg("id", d.id_column), fmt::arg("real", d.real_type),
                                fmt::arg("int", d.int_type)));
    const auto s = connection.prepare("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)");
    s->bind(1, version).bind(2, utc_now_iso8601()).run();
    transaction.commit();
  }
  return latest_schema_version() - at;
}

}  // namespace memstress::db
