// What the store keeps at ingest (harness/db/summary.hpp, Note [Summaries kept at ingest]): each GPU's
// summary of each measurement is what the runs held give, whatever order and batches they came in; a batch
// rolled back leaves nothing; a prune leaves the store a store of what is left would be. On SQLite and on
// PostgreSQL.

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "harness/db/ingest.hpp"
#include "harness/db/outliers.hpp"
#include "harness/db/prune.hpp"
#include "harness/db/summary.hpp"
#include "tests/unit/db_backend.hpp"
#include "tests/unit/db_fleet_files.hpp"

namespace memstress::db {
namespace {

using DbSummary = OnBackend;

struct FleetRun {
  std::filesystem::path path;
  std::string started_at;
};

// `runs` runs of each of nodes 01 to 03, day by day from 2026-10-01 (then the next months), each a little
// faster or slower than the one before; shuffled, so that they come in no order of time.
std::vector<FleetRun> fleet_runs(const std::filesystem::path& dir, int runs, unsigned seed = 7) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> factor(0.95, 1.05);
  std::vector<FleetRun> out;
  for (int run = 0; run < runs; ++run) {
    const std::string started = fmt::format("2026-{:02d}-{:02d}T11:00:00Z", 10 + run / 28, 1 + run % 28);
    for (const char* node : {"node01", "node02", "node03"}) {
      out.push_back({fleet_run(dir, node, started, factor(rng)), started});
    }
  }
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

// The summaries as made from the runs' medians themselves: each GPU's newest kSeriesWindow of each
// measurement (of those started since `since`).
std::string expected_summaries(Store& store, const std::string& since = "") {
  std::map<std::string, std::vector<std::pair<std::string, double>>> series;
  for (const MetricObservation& o : store.observations({"", since, "", ""})) {
    series[fmt::format("{} | {} | {} | {} | {} | {} | {} | {} | {} | {} {} {}", o.workload, o.case_label,
                       o.allocator, o.metric, o.unit, to_string(o.better), o.model, o.driver,
                       o.concurrent_ranks, o.gpu_uuid, o.host, o.pci_bus_id)]
        .emplace_back(o.started_at, o.median);
  }
  std::string out;
  for (auto& [key, points] : series) {
    std::sort(points.rbegin(), points.rend());
    std::vector<double> medians;
    for (std::size_t i = 0; i < points.size() && i < kSeriesWindow; ++i) {
      medians.push_back(points[i].second);
    }
    const GpuSummary s = summarize_runs(medians);
    out += fmt::format("{} | runs {} median {:.9g} scatter {:.9g}\n", key, s.runs, s.median,
                       std::isnan(s.scatter) ? -1.0 : s.scatter);
  }
  return out;
}

void ingest_in_batches(Store& store, const std::vector<FleetRun>& runs, std::size_t batch_files) {
  IngestSettings settings;
  settings.batch_files = batch_files;
  std::vector<std::string> paths;
  paths.reserve(runs.size());
  for (const FleetRun& r : runs) {
    paths.push_back(r.path.string());
  }
  std::istringstream none;
  PathSource source(paths, none);
  ingest_files(store, source, settings, [](const FileIngest& f) { ASSERT_TRUE(f.outcome) << f.error; });
}

TEST_P(DbSummary, AreEachGpusNewestRunsWhateverTheOrderAndTheBatches) {
  // 40 runs a node: more than a window, in no order of time, 7 files a transaction.
  const std::vector<FleetRun> runs = fleet_runs(dir_.path(), 40);
  Store store(open_database(fresh("fleet"), OpenMode::create, "--db"));
  ingest_in_batches(store, runs, 7);
  EXPECT_EQ(store.counts().runs, 120);
  const std::string kept = summaries(store);
  EXPECT_EQ(kept, expected_summaries(store));
  EXPECT_NE(kept.find(fmt::format("runs {} median", kSeriesWindow)), std::string::npos) << kept;
  // A window asked for: made from the runs started since, the same way.
  EXPECT_EQ(summaries(store, {"", "2026-11-01", {}}), expected_summaries(store, "2026-11-01"));
  // One file a transaction gives the same store.
  Store one_by_one(open_database(fresh("one"), OpenMode::create, "--db"));
  for (const FleetRun& r : runs) {
    ASSERT_TRUE(ingest_file(one_by_one, r.path).outcome);
  }
  EXPECT_EQ(answers(one_by_one), answers(store));
}

TEST_P(DbSummary, ARunsStreamAndItsDocumentCountOnce) {
  const std::filesystem::path base = std::filesystem::path(MEMSTRESS_SOURCE_DIR) / "results/h100/compare";
  Store store(open_database(fresh("fleet"), OpenMode::create, "--db"));
  for (const char* name : {"base-h100-580.159.04.jsonl.xz", "base-h100-580.159.04.json.xz"}) {
    ASSERT_TRUE(ingest_file(store, base / name).outcome) << name;
  }
  const std::string kept = summaries(store);
  EXPECT_EQ(kept, expected_summaries(store));
  EXPECT_NE(kept.find("runs 1 median"), std::string::npos) << kept;
  EXPECT_EQ(kept.find("runs 2"), std::string::npos) << kept;
}

TEST_P(DbSummary, ABatchRolledBackLeavesNothingAndIngestingAgainCompletesIt) {
  const std::vector<FleetRun> runs = fleet_runs(dir_.path(), 2);
  Store store(open_database(fresh("fleet"), OpenMode::create, "--db"));
  ASSERT_TRUE(ingest_file(store, runs[0].path).outcome);
  {
    IngestBatch batch(store, {});
    for (std::size_t i = 1; i < runs.size(); ++i) {
      const ParsedFile parsed = parse_file(runs[i].path);
      ASSERT_TRUE(parsed.results) << parsed.file.error;
      EXPECT_EQ(batch.add(*parsed.results, parsed.sha256, parsed.file.path).action, IngestAction::added);
    }
  }  // as a crash: never committed
  EXPECT_EQ(store.counts().runs, 1);
  for (const char* table : {"devices", "series", "measurements", "latest_rows"}) {
    const auto s = store.connection().prepare(fmt::format("SELECT count(*) FROM {}", table));
    ASSERT_TRUE(s->step());
    EXPECT_GT(s->integer(0), 0) << table << ": the committed file's are kept";
  }
  ingest_in_batches(store, runs, 4);
  EXPECT_EQ(store.counts().runs, static_cast<std::int64_t>(runs.size()));
  Store whole(open_database(fresh("whole"), OpenMode::create, "--db"));
  ingest_in_batches(whole, runs, 100);
  EXPECT_EQ(summaries(store), summaries(whole));
}

TEST_P(DbSummary, StatisticsOnlyKeepsNoSamplesAndJudgesTheSame) {
  const std::vector<FleetRun> runs = fleet_runs(dir_.path(), 3);
  Store with(open_database(fresh("with"), OpenMode::create, "--db"));
  Store without(open_database(fresh("without"), OpenMode::create, "--db"));
  for (const FleetRun& r : runs) {
    ASSERT_TRUE(ingest_file(with, r.path).outcome);
    ASSERT_TRUE(ingest_file(without, r.path, {.keep_samples = false}).outcome);
  }
  EXPECT_GT(with.counts().samples, 0);
  EXPECT_EQ(without.counts().samples, 0);
  EXPECT_EQ(without.counts().metrics, with.counts().metrics);
  EXPECT_EQ(answers(without), answers(with));
}

class DbPrune : public OnBackend {
 protected:
  // A store of 12 days of runs, pruned, against a store of the runs the prune leaves (`left` of them).
  void expect_pruned_as_made(const PruneOptions& options, std::size_t left) {
    const std::vector<FleetRun> runs = fleet_runs(dir_.path(), 12);
    Store pruned(open_database(fresh("pruned"), OpenMode::create, "--db"));
    ingest_in_batches(pruned, runs, 10);
    const PruneOutcome o = prune(pruned, options);
    EXPECT_EQ(o.runs_held, 36);
    EXPECT_EQ(o.runs_selected, static_cast<std::int64_t>(36 - left));
    EXPECT_EQ(pruned.counts().runs, static_cast<std::int64_t>(left));
    // What should stay: each node's runs are its one GPU's.
    const auto node = [](const FleetRun& r) { return r.path.filename().string().substr(0, 6); };
    std::vector<FleetRun> kept;
    for (const FleetRun& r : runs) {
      const auto newer =
          static_cast<std::size_t>(std::count_if(runs.begin(), runs.end(), [&](const FleetRun& x) {
            return x.started_at > r.started_at && node(x) == node(r);
          }));
      const bool old = !options.before.empty() && r.started_at < options.before;
      const bool beyond = options.keep_runs > 0 && newer >= options.keep_runs;
      if (!((options.before.empty() || old) && (options.keep_runs == 0 || beyond))) {
        kept.push_back(r);
      }
    }
    ASSERT_EQ(kept.size(), left);
    Store made(open_database(fresh("made"), OpenMode::create, "--db"));
    ingest_in_batches(made, kept, 10);
    EXPECT_EQ(answers(pruned), answers(made));
    EXPECT_EQ(summaries(pruned), expected_summaries(pruned));
  }
};

TEST_P(DbPrune, ByAgeLeavesWhatAStoreOfTheRestHolds) {
  PruneOptions o;
  o.before = "2026-10-05";  // 4 of 12 days, three nodes a day
  expect_pruned_as_made(o, 24);
}

TEST_P(DbPrune, ByRunsKeptPerGpuLeavesWhatAStoreOfTheRestHolds) {
  PruneOptions o;
  o.keep_runs = 5;
  expect_pruned_as_made(o, 15);
}

TEST_P(DbPrune, BothSelectTogether) {
  PruneOptions o;
  o.before = "2026-10-10";  // 9 days before
  o.keep_runs = 5;          // 7 days beyond: 7 days go
  expect_pruned_as_made(o, 15);
}

TEST_P(DbPrune, EveryRunIsRefusedUnlessAskedAndSamplesOnlyKeepsTheRuns) {
  const std::vector<FleetRun> runs = fleet_runs(dir_.path(), 2);
  Store store(open_database(fresh("fleet"), OpenMode::create, "--db"));
  ingest_in_batches(store, runs, 10);
  const std::string before = answers(store);
  PruneOptions all;
  all.before = "2100-01-01";
  try {
    prune(store, all);
    FAIL() << "a prune of every run went through";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("would delete every run"), std::string::npos) << e.what();
  }
  EXPECT_EQ(answers(store), before);
  all.dry_run = true;
  EXPECT_EQ(prune(store, all).runs_selected, 6);
  EXPECT_EQ(answers(store), before);
  all.dry_run = false;
  all.samples_only = true;
  const PruneOutcome dropped = prune(store, all);
  EXPECT_EQ(dropped.runs_selected, 6);
  EXPECT_GT(dropped.samples, 0);
  EXPECT_EQ(store.counts().samples, 0);
  EXPECT_EQ(answers(store), before);
  all.samples_only = false;
  all.all = true;
  EXPECT_EQ(prune(store, all).runs_selected, 6);
  EXPECT_EQ(store.counts().runs, 0);
  EXPECT_EQ(summaries(store), "");
  EXPECT_THROW(prune(store, {}), InputError);
}

INSTANTIATE_TEST_SUITE_P(Backends, DbSummary, ::testing::ValuesIn(db_backends()), backend_name);
INSTANTIATE_TEST_SUITE_P(Backends, DbPrune, ::testing::ValuesIn(db_backends()), backend_name);

}  // namespace
}  // namespace memstress::db
