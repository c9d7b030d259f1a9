#pragma once

// `memstress db prune`: bounded storage. Runs deleted by age (--before) or beyond each GPU's newest N
// (--keep-runs), or only their samples (--samples-only: each metric keeps its statistics).
//
// Note [Pruning the store]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A run goes whole: its files, ranks, rows and metrics (the store's cascades on run_id). --keep-runs N keeps,
// for each GPU the rows name, the N runs of it that started last; a run is deleted when no GPU keeps it (a
// job of 8 GPUs is kept while any of its GPUs keeps it), and runs that measured no GPU are kept. --before D
// selects the runs started before D (runs whose start is unknown are kept); with both, a run goes when both
// select it. Then the summaries of the series that lost a point are read again whole, a series left without a
// point goes, and the newest rows of the GPUs that lost one are made again (Note [Summaries kept at ingest]);
// all in one transaction under the writer lock, so a query or an ingest sees the store before or after, never
// between. A prune that would delete every run the store holds is refused (exit 2, nothing deleted) unless
// asked for with `all`: a date mistyped a century late must not empty a fleet's history. SQLite keeps the
// pages it freed for the next ingests (the file does not shrink; VACUUM returns them); PostgreSQL's
// autovacuum does the same for its tables.

#include <cstdint>
#include <string>

#include "harness/db/store.hpp"

namespace memstress::db {

struct PruneOptions {
  std::string before;         // "" none; else runs started before this UTC date or time
  std::size_t keep_runs = 0;  // 0 none; else each GPU's newest this many runs are kept
  bool samples_only = false;  // drop the selected runs' samples, keeping the runs and their statistics
  bool all = false;           // may select every run held
  bool dry_run = false;       // say what would go, change nothing
  // The options above as the command names them in the errors (`memstress db prune`'s flags).
  struct Names {
    std::string before;
    std::string keep_runs;
    std::string all;
  } names;
};

struct PruneOutcome {
  std::int64_t runs_held = 0;      // before the prune
  std::int64_t runs_selected = 0;  // deleted (or whose samples were dropped)
  std::int64_t metrics = 0;        // of the selected runs
  std::int64_t samples = 0;        // of the selected runs
};

// Throws InputError when neither `before` nor `keep_runs` is set, and when every run held is selected for
// deletion without `all` (nothing changed).
PruneOutcome prune(Store& store, const PruneOptions& options);

}  // namespace memstress::db
