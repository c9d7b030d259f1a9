#pragma once

// What the store keeps up to date as it ingests, so that a query reads what the fleet is rather than all it
// has held.
//
// Note [Summaries kept at ingest]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// `db outliers`, `compare` and `train` judge each GPU by one value per measurement: the median of its runs'
// medians (Note [Fleet outliers: median and MAD]). Read from the runs, a query's cost grew with every run
// ever stored: 5 s at 10,000 GPUs with 20 runs each, some 50 s at 100,000, and more each month. So the store
// keeps, per GPU and measurement (a `series`), the summary the rule needs: how many runs, their median and
// their scaled MAD (GpuSummary), over the GPU's newest kSeriesWindow runs of it. A query reads one row per
// GPU and measurement (plus the measurements and the GPUs, a row each), whatever the history. The window is
// also what an operator wants judged: a GPU that slowed down last week is not outvoted by a year of healthy
// runs.
//
// A metric that is a point of a series (better direction, finite median, a row that passed or failed on a GPU
// it names) carries its series and its run's start; the index (series_id, started_at, median) finds a series'
// newest points and holds their medians, so that a summary is made again from the index alone (read from the
// metrics' rows, scattered over the table, a day's run of 250 nodes into a store of 10,000 GPUs x 20 runs
// took 11 ms of CPU a file, not 8). After a batch of files is written (Note [Ingesting in batches]), each
// series it touched is summarised again from its points from `window_from` on (the start of its
// kSeriesWindow-th newest point, "" while it has fewer): the window plus what the batch added, a few rows,
// never its history. Where a point inside a window goes (a run replaced by a fuller copy, db prune) the
// window is read again whole ("" again); a series left without a point goes. `devices` holds each GPU as last
// seen (host, PCI bus id: the newest run's), and `latest_rows` each GPU's newest row of each case (db
// export), upserted at ingest where newer and rebuilt for the GPUs whose rows a replacement or a prune
// deleted.
//
// With --since a query reads the points of the runs started since (through runs_started, rows_run and
// metrics_row), sorted by series, and summarises them the same way: what it costs is the window asked for.
// History (`db history`) is a GPU's or a host's points, through devices, series_device and metrics_series or
// ranks_host: what it costs is that GPU's or host's history.
//
// Note [Ingesting in batches]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A file a transaction was a commit, a writer-lock round and a summary update per file. IngestBatch writes
// many files in one transaction (ingest_files: 256, or what arrives in 2 s, whichever is first), and brings
// the summaries up to date once per batch. What a crash loses is the batch in flight: committed batches are
// whole, and since a file is known by its content (Note [Idempotent ingest]) ingesting the same files again
// finds the committed ones unchanged and adds the rest. Each file's writes are a few statements over many
// rows (Note [Many rows a statement]). Ids (measurements, devices, series) are cached for the batch only: the
// writer lock is held for its length, so nothing else changes them meanwhile, and a batch rolled back takes
// the ids it made with it.

#include <cstdint>
#include <string>
#include <vector>

#include "harness/db/connection.hpp"
#include "harness/db/many_rows.hpp"
#include "harness/db/store.hpp"

namespace memstress::db {

// How many of its newest runs a GPU is judged by, per measurement.
inline constexpr std::size_t kSeriesWindow = 32;

// A series' point: its run's start, the metric's id (the order of runs started in the same second) and
// median.
struct SeriesPoint {
  std::string started_at;
  std::int64_t id = 0;
  double median = 0;
};

// The summary of the newest kSeriesWindow points (reordered, newest first); `window_from` set to the start of
// the oldest of them where there were at least kSeriesWindow, else to "".
GpuSummary summarize_window(std::vector<SeriesPoint>& points, std::string& window_from);

// Brings the summaries of the series `ids` up to date from their points (Note [Summaries kept at ingest]);
// a series without a point left is deleted.
void refresh_series(StatementCache& cache, const std::vector<std::int64_t>& ids);

// Sets the windows of the series `ids` to be read whole at their next refresh.
void reopen_windows(StatementCache& cache, const std::vector<std::int64_t>& ids);

// Makes each GPU's `latest_rows` again from the rows the store holds, for the GPUs `device_ids`.
void rebuild_latest(StatementCache& cache, const std::vector<std::int64_t>& device_ids);

// Schema version 2's migration past its SQL (schema.cpp): devices, measurements, series and each metric's
// series from what a version 1 store holds, then latest_rows and every summary.
void backfill_summaries(Connection& connection);

}  // namespace memstress::db
