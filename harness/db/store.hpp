#pragma once

// The fleet store: results files kept in a database (connection.hpp), and what the queries read back.
// Its interface has no backend type in it: a Store works on any Connection.
//
// Note [Idempotent ingest]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A file is known by the SHA-256 of its content, not its name: ingesting it again (or a copy under
// another name) changes nothing and says which file gave it first. A *run* is known by its run key:
// for memstress results the start time (to the second), the command line, the memstress version and
// every rank's host and GPUs, which the run's `.jsonl` stream and its `.json` document share (two runs
// started in the same second on one machine differ in their command lines: two runs may not share an
// `--out`); for Google Benchmark JSON (written once, whole) the content hash. So the stream of a run that is
// still going (or crashed) and its document written later are one run, not two, and the GPUs' medians are not
// counted twice: the one with more rows wins (a finished document over its stream: more rows, or as many and
// no longer `running`), replacing the other's rows in the same transaction; the other is recorded as a file
// of that run. Files are ingested in batches, a transaction each (IngestBatch): a batch that fails midway
// leaves nothing of it, and the batches before it stay.

#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "harness/db/connection.hpp"
#include "harness/results/read.hpp"

namespace memstress::db {

enum class IngestAction {
  added,      // a new run
  replaced,   // the same run was held from a file with fewer rows: this one's rows replace them
  same_run,   // the same run is held from a file with as many rows or more: kept as it was
  unchanged,  // this content was ingested before
};
std::string_view to_string(IngestAction action) noexcept;

struct IngestOutcome {
  IngestAction action = IngestAction::added;
  std::string held_from;  // replaced, same_run, unchanged: the file the store held the run from
  std::size_t rows = 0;   // rows of the run as held now
  std::size_t gpus = 0;   // distinct GPU UUIDs of the run
};

// One GPU's median of one metric in one row: the measurement (Note [The key of a measurement] in
// harness/results/row.hpp) and what else groups it (outliers.hpp).
struct MetricObservation : MeasurementKey {
  std::string model;   // the GPU model (the row's device name)
  std::string driver;  // of the rank that ran the row
  // Ranks that ran the case at the same time (the job's, or 1 where it ran --in-turn): a collective's
  // busbw over 2 GPUs is not the one over 4, nor is a copy alone the one beside 3 others on a host.
  int concurrent_ranks = 1;
  std::string host;
  std::string gpu_uuid;
  std::string pci_bus_id;
  std::string started_at;  // the run's
  double median = 0;
  // The store's row: consecutive observations of one row differ in the metric only (the metric's name,
  // unit, better direction and median), so a reader may skip the rest (OutlierAccumulator). Unique within
  // one store, not across stores. 0: not known.
  std::int64_t row_id = 0;
};

struct ObservationFilter {
  std::string metric;    // "" every metric
  std::string since;     // "" always; else runs started at or after it (ISO 8601, compared as text)
  std::string gpu_uuid;  // "" every GPU
  std::string host;      // "" every host
};

// What a group of GPUs is compared on (Note [Fleet outliers: median and MAD]): a measurement on one GPU model
// under one driver, as many ranks running it at once. A row of the store's `measurements`.
struct Measurement : MeasurementKey {
  std::int64_t id = 0;
  std::string model, driver;
  int concurrent_ranks = 1;
};

// A GPU as last seen (the newest run that measured it): a row of the store's `devices`.
struct Device {
  std::int64_t id = 0;
  std::string uuid, host, pci_bus_id;
  std::string seen_at;  // that run's start
};

// A GPU's runs of one measurement, summarised: how many, their median (the GPU's value) and their scaled MAD
// about it (its run-to-run scatter; NaN below 2 runs): what the store keeps of each GPU and measurement (Note
// [Summaries kept at ingest] in summary.hpp) and what the outlier rule judges (outliers.hpp).
struct GpuSummary {
  std::size_t runs = 0;
  double median = std::numeric_limits<double>::quiet_NaN();
  double scatter = std::numeric_limits<double>::quiet_NaN();
};

struct SeriesFilter {
  std::string metric;                // "" every metric
  std::string since;                 // "" each GPU's newest runs; else its newest of those started since
  std::vector<std::string> drivers;  // empty: every driver
};

struct IngestOptions {
  // false: each metric's statistics only (median, percentiles, mean, ...), not its repetitions (samples).
  bool keep_samples = true;
};

class Store {
 public:
  // Opens the database and brings its schema to this memstress's version (schema.hpp); a read-only
  // connection's is checked instead, and refused unless it is that version (check_current).
  explicit Store(std::unique_ptr<Connection> connection);

  // Ingests one file's results (its content's hash `sha256`) in a transaction of its own (IngestBatch).
  IngestOutcome ingest(const Results& results, const std::string& sha256, const std::string& path,
                       const IngestOptions& options = {});

  // Every finite median of a metric with a better direction, of a row that passed or failed (skipped and
  // errored rows measured nothing), on a GPU the row names by UUID: one a run. Of one GPU (filter.gpu_uuid)
  // or host (filter.host), what that GPU or host ran (its history, read through indexes); of neither, all the
  // store holds.
  std::vector<MetricObservation> observations(const ObservationFilter& filter);
  // The same, one at a time and never all held: `visit` sees each, in no set order.
  void for_each_observation(const ObservationFilter& filter,
                            const std::function<void(const MetricObservation&)>& visit);

  // Each GPU's summary of each measurement (Note [Summaries kept at ingest]): the summaries kept, read whole
  // (a row a GPU and measurement, not a row a run); with filter.since, made from the runs started since (each
  // GPU's newest kSeriesWindow of them). `visit` sees each once, in no set order.
  void for_each_series(
      const SeriesFilter& filter,
      const std::function<void(const Measurement&, const Device&, const GpuSummary&)>& visit);

  // The UUIDs of the GPUs the store holds rows of, sorted.
  std::vector<std::string> gpu_uuids();
  // The drivers the store holds measurements under, sorted.
  std::vector<std::string> drivers();

  // Counts of what the store holds, for messages and tests. The samples (a sum over every metric, which reads
  // the whole table: seconds at a fleet's scale) only where asked for; else 0.
  struct Counts {
    std::int64_t files = 0, runs = 0, rows = 0, metrics = 0, samples = 0;
  };
  Counts counts(bool samples = true);

  [[nodiscard]] Connection& connection() noexcept { return *connection_; }

 private:
  std::unique_ptr<Connection> connection_;
};

// Files ingested in one transaction (Note [Ingesting in batches] in summary.hpp): the writer lock is taken
// when it starts; add() stores each file as Store::ingest did one; commit() brings the summaries of the GPUs
// and measurements the batch touched up to date and commits. Destroyed without commit() (an exception, a
// database error), everything the batch wrote is rolled back: the files before it stay, and ingesting the
// batch's files again adds them.
class IngestBatch {
 public:
  IngestBatch(Store& store, IngestOptions options);
  ~IngestBatch();
  IngestBatch(const IngestBatch&) = delete;
  IngestBatch& operator=(const IngestBatch&) = delete;
  IngestBatch(IngestBatch&&) = delete;
  IngestBatch& operator=(IngestBatch&&) = delete;

  IngestOutcome add(const Results& results, const std::string& sha256, const std::string& path);
  void commit();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The run key of Note [Idempotent ingest].
std::string run_key(const Results& results, const std::string& sha256);

}  // namespace memstress::db
