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
// of that run. Each file is ingested in one transaction: a file that fails midway leaves nothing.

#include <functional>
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

class Store {
 public:
  // Opens the database and brings its schema to this memstress's version (schema.hpp); a read-only
  // connection's is checked instead, and refused unless it is that version (check_current).
  explicit Store(std::unique_ptr<Connection> connection);

  // Ingests one file's results (loaded from `text`, whose hash is `sha256`) in one transaction.
  IngestOutcome ingest(const Results& results, const std::string& sha256, const std::string& path);

  // Every finite median of a metric with a better direction, of a row that passed or failed (skipped
  // and errored rows measured nothing), on a GPU the row names by UUID.
  std::vector<MetricObservation> observations(const ObservationFilter& filter);
  // The same, one at a time and never all held (a fleet has millions): `visit` sees each, in no set order.
  void for_each_observation(const ObservationFilter& filter,
                            const std::function<void(const MetricObservation&)>& visit);

  // The UUIDs of the GPUs the store holds rows of, sorted.
  std::vector<std::string> gpu_uuids();

  // Counts of what the store holds, for messages and tests.
  struct Counts {
    std::int64_t files = 0, runs = 0, rows = 0, metrics = 0, samples = 0;
  };
  Counts counts();

  [[nodiscard]] Connection& connection() noexcept { return *connection_; }

 private:
  std::unique_ptr<Connection> connection_;
};

// The run key of Note [Idempotent ingest].
std::string run_key(const Results& results, const std::string& sha256);

}  // namespace memstress::db
