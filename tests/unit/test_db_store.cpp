// The fleet store (harness/db): migrations from an empty database, idempotent ingest keyed by content,
// a run's stream and document held once, bad files skipped, transactions rolled back on error; on SQLite and,
// where its server runs (tests/db), on PostgreSQL, by the same code.

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "harness/db/ingest.hpp"
#include "harness/db/schema.hpp"
#include "harness/db/sha256.hpp"
#include "harness/db/store.hpp"
#include "harness/results/compressed.hpp"
#include "harness/results/read.hpp"
#include "tests/unit/db_backend.hpp"
#include "tests/unit/temp_dir.hpp"

namespace memstress::db {
namespace {

using memstress::testing::slurp;
using memstress::testing::TempDir;

const std::filesystem::path kSource = MEMSTRESS_SOURCE_DIR;
// The same real run twice: its document and its stream (results/README.md).
const std::filesystem::path kBaseDocument = kSource / "results/h100/compare/base-h100-580.159.04.json.xz";
const std::filesystem::path kBaseStream = kSource / "results/h100/compare/base-h100-580.159.04.jsonl.xz";
const std::filesystem::path kBench = kSource / "results/h200/bench-alloc-h200-580.159.04.json.xz";

std::int64_t scalar(Connection& c, const std::string& sql) {
  const auto s = c.prepare(sql);
  EXPECT_TRUE(s->step()) << sql;
  return s->integer(0);
}

// How messages name a store: its path, or its URL up to the query (the password masked after it).
std::string store_name(const std::string& url) {
  return url.substr(0, url.find('?'));
}

void write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the length no longer fits in the first padded block.
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000, 'a')),
            "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

using DbSchemaOn = OnBackend;
using DbStore = OnBackend;
using DbTransaction = OnBackend;

TEST_P(DbSchemaOn, MigratesAnEmptyDatabaseOnceAndRecordsTheVersion) {
  const std::string path = fresh("fleet");
  auto c = open_database(path, OpenMode::create, "--db");
  EXPECT_EQ(schema_version(*c), 0);
  EXPECT_EQ(migrate(*c), latest_schema_version());
  EXPECT_EQ(schema_version(*c), latest_schema_version());
  EXPECT_EQ(migrate(*c), 0);  // already there
  EXPECT_EQ(scalar(*c, "SELECT count(*) FROM schema_version"), latest_schema_version());
  for (const char* table : {"runs", "files", "ranks", "gpus", "rows", "metrics"}) {
    EXPECT_EQ(scalar(*c, std::string("SELECT count(*) FROM ") + table), 0) << table;
  }
}

TEST_P(DbSchemaOn, RefusesADatabaseFromANewerMemstress) {
  const std::string path = fresh("fleet");
  {
    auto c = open_database(path, OpenMode::create, "--db");
    migrate(*c);
    c->exec("INSERT INTO schema_version (version, applied_at) VALUES (99, 'later')");
  }
  auto c = open_database(path, OpenMode::create, "--db");
  try {
    migrate(*c);
    FAIL() << "a newer schema was accepted";
  } catch (const DbError& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99 was made by a newer memstress"),
              std::string::npos)
        << e.what();
  }
}

TEST_P(DbSchemaOn, RefusesVersionsPastAnIntAsNewerNeverWrapped) {
  // 2^31 read as an int was negative and indexed the migrations below their start (SIGSEGV); 2^32 + 1 was
  // read as 1 (Note [Schema versions]).
  for (const char* version : {"2147483648", "4294967297", "999999999999", "9223372036854775807"}) {
    const std::string path = fresh(std::string("fleet") + version);
    {
      auto c = open_database(path, OpenMode::create, "--db");
      migrate(*c);
      c->exec(std::string("INSERT INTO schema_version (version, applied_at) VALUES (") + version + ", 'x')");
    }
    for (const OpenMode mode : {OpenMode::create, OpenMode::read_only}) {
      try {
        Store store(open_database(path, mode, "--db"));
        FAIL() << "schema version " << version << " was accepted";
      } catch (const DbError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(std::string("schema version ") + version + " was made by a newer memstress"),
                  std::string::npos)
            << what;
      }
    }
  }
}

TEST_P(DbSchemaOn, RefusesAVersionNoMemstressWrites) {
  // What memstress's own table can hold (a 64-bit integer) below 1, and, in a table another program made
  // with a text column, what it cannot.
  std::vector<std::pair<std::string, std::string>> cases{{"", "0"}, {"", "-1"}, {"", "-9223372036854775808"}};
  for (const char* v : {"'x'", "'1 '", "'1.5'", "NULL", "'99999999999999999999999'"}) {
    cases.emplace_back(
        "DROP TABLE schema_version; CREATE TABLE schema_version (version TEXT, applied_at TEXT);", v);
  }
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& [prepare, version] = cases[i];
    const std::string path = fresh("fleet" + std::to_string(i));
    {
      auto c = open_database(path, OpenMode::create, "--db");
      migrate(*c);
      std::string sql = prepare;
      sql += "INSERT INTO schema_version (version, applied_at) VALUES (";
      sql += version;
      sql += ", 'x')";
      c->exec(sql);
    }
    for (const OpenMode mode : {OpenMode::create, OpenMode::read_only}) {
      try {
        Store store(open_database(path, mode, "--db"));
        FAIL() << "schema version " << version << " was accepted";
      } catch (const DbError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("not a schema version memstress writes"), std::string::npos) << what;
        EXPECT_NE(what.find(store_name(path)), std::string::npos) << "names the store: " << what;
      }
    }
  }
}

TEST(DbSchema, OpeningRefusesMissingDatabasesAndOtherFiles) {
  TempDir dir;
  EXPECT_THROW(open_database(dir.file("none.sqlite").string(), OpenMode::read_only, "--db"), InputError);
  write(dir.file("text.sqlite"),
        "this is not a database, but a long enough line of text to be read as one\n");
  EXPECT_THROW(open_database(dir.file("text.sqlite").string(), OpenMode::read_only, "--db"), InputError);
  EXPECT_THROW(open_database("postgresql:///fleet?host=/nonexistent", OpenMode::create, "--db"), InputError);
}

TEST_P(DbStore, IngestingTheSameFileTwiceChangesNothing) {
  TempDir dir;
  Store store(open_database(fresh("fleet"), OpenMode::create, "--db"));
  const FileIngest first = ingest_file(store, kBaseDocument);
  ASSERT_TRUE(first.outcome) << first.error;
  EXPECT_EQ(first.outcome->action, IngestAction::added);
  EXPECT_EQ(first.outcome->rows, 4U);
  EXPECT_EQ(first.outcome->gpus, 1U);
  const Store::Counts before = store.counts();
  EXPECT_EQ(before.runs, 1);
  EXPECT_EQ(before.rows, 4);
  EXPECT_GT(before.samples, 0);
  // Each metric's repetitions read back as the JSON array they were written as.
  const auto stored = store.connection().prepare("SELECT sample_count, samples FROM metrics ORDER BY id");
  ASSERT_TRUE(stored->step());
  const nlohmann::json samples = nlohmann::json::parse(stored->text(1));
  ASSERT_TRUE(samples.is_array());
  EXPECT_EQ(samples.size(), static_cast<std::size_t>(stored->integer(0)));
  EXPECT_GT(samples.size(), 0U);

  // Again, and a copy under another name: known by content.
  std::filesystem::copy_file(kBaseDocument, dir.file("copy.json"));
  for (const std::filesystem::path& p : {kBaseDocument, dir.file("copy.json")}) {
    const FileIngest again = ingest_file(store, p);
    ASSERT_TRUE(again.outcome) << again.error;
    EXPECT_EQ(again.outcome->action, IngestAction::unchanged);
    EXPECT_EQ(again.outcome->held_from, kBaseDocument.string());
  }
  const Store::Counts after = store.counts();
  EXPECT_EQ(after.files, before.files);
  EXPECT_EQ(after.rows, before.rows);
  EXPECT_EQ(after.samples, before.samples);
}

TEST_P(DbStore, KeepsWhatIdentifiesTheMachineAndTheGpu) {
  Store store(open_database(fresh("fleet"), OpenMode::create, "--db"));
  ASSERT_TRUE(ingest_file(store, kBaseDocument).outcome);
  Connection& c = store.connection();
  const auto s = c.prepare(
      "SELECT k.host, k.driver, k.cuda_runtime, g.name, g.uuid, g.pci_bus_id FROM ranks k JOIN gpus g ON "
      "g.run_id = k.run_id AND g.rank = k.rank");
  ASSERT_TRUE(s->step());
  EXPECT_FALSE(s->text(0).empty());
  EXPECT_EQ(s->text(1), "580.159.04");
  EXPECT_EQ(s->text(2), "13.0");
  EXPECT_EQ(s->text(3), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(s->text(4), "GPU-65d35e1b-56df-98bf-153b-1e9efdb616c2");
  EXPECT_FALSE(s->text(5).empty());
  // The run's environment facts, as `memstress compare` lists them.
  const auto run = c.prepare("SELECT memstress_version, environment FROM runs");
  ASSERT_TRUE(run->step());
  EXPECT_FALSE(run->text(0).empty());
  const nlohmann::json facts = nlohmann::json::parse(run->text(1));
  ASSERT_TRUE(facts.is_array());
  EXPECT_NE(std::find(facts.begin(), facts.end(), nlohmann::json::array({"driver", "580.159.04"})),
            facts.end())
      << facts.dump();
  const std::vector<MetricObservation> seen = store.observations({});
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front().gpu_uuid, "GPU-65d35e1b-56df-98bf-153b-1e9efdb616c2");
  EXPECT_EQ(seen.front().driver, "580.159.04");
  EXPECT_EQ(store.observations({"no-such-metric", "", "", ""}).size(), 0U);
  EXPECT_EQ(store.observations({"", "2100-01-01", "", ""}).size(), 0U);
}

TEST_P(DbStore, ARunsStreamAndItsDocumentAreOneRun) {
  Store store(open_database(fresh("fleet"), OpenMode::create, "--db"));
  const FileIngest stream = ingest_file(store, kBaseStream);
  ASSERT_TRUE(stream.outcome) << stream.error;
  const FileIngest document = ingest_file(store, kBaseDocument);
  ASSERT_TRUE(document.outcome) << document.error;
  // The stream of a finished run has every row; the document replaces it only where it has more, or
  // as many and the stream's run was still running.
  EXPECT_TRUE(document.outcome->action == IngestAction::replaced ||
              document.outcome->action == IngestAction::same_run)
      << to_string(document.outcome->action);
  EXPECT_EQ(document.outcome->held_from, kBaseStream.string());
  const Store::Counts c = store.counts();
  EXPECT_EQ(c.runs, 1);
  EXPECT_EQ(c.files, 2);
  EXPECT_EQ(c.rows, 4);
}

TEST_P(DbStore, RunsStartedInTheSameSecondAreTwoRuns) {
  // Two real runs on one H200, started in the same second by scripts/lab/gpu-check (the smoke run took
  // under a second): their command lines tell them apart.
  Store store(open_database(fresh("fleet"), OpenMode::create, "--db"));
  for (const char* name : {"smoke-h200-580.159.04.json.xz", "default-h200-580.159.04.json.xz"}) {
    const FileIngest file = ingest_file(store, kSource / "results/h200" / name);
    ASSERT_TRUE(file.outcome) << file.error;
    EXPECT_EQ(file.outcome->action, IngestAction::added) << describe(file);
  }
  EXPECT_EQ(store.counts().runs, 2);
}

TEST_P(DbStore, RowsSayHowManyRanksRanTheirCaseAtOnce) {
  // Four ranks copying together, and the same copies taken --in-turn (results/h200x4): 4 and 1.
  Store store(open_database(fresh("fleet"), OpenMode::create, "--db"));
  for (const char* name :
       {"transfers-together-h200x4-580.159.04.json.xz", "transfers-in-turn-h200x4-580.159.04.json.xz"}) {
    ASSERT_TRUE(ingest_file(store, kSource / "results/h200x4" / name).outcome) << name;
  }
  Connection& c = store.connection();
  EXPECT_EQ(scalar(c,
                   "SELECT count(DISTINCT concurrent_ranks) FROM rows r JOIN runs u ON r.run_id = u.id "
                   "WHERE u.source_path LIKE '%together%'"),
            1);
  EXPECT_EQ(scalar(c,
                   "SELECT min(concurrent_ranks) FROM rows r JOIN runs u ON r.run_id = u.id "
                   "WHERE u.source_path LIKE '%together%'"),
            4);
  EXPECT_EQ(scalar(c,
                   "SELECT max(concurrent_ranks) FROM rows r JOIN runs u ON r.run_id = u.id "
                   "WHERE u.source_path LIKE '%in-turn%'"),
            1);
}

TEST_P(DbStore, AStreamCutShortIsReplacedByTheWholeRun) {
  TempDir dir;
  const std::string text = decompressed(slurp(kBaseStream), kMaxResultsFileBytes);  // committed xz-compressed
  // The header and the first row only: the run as a crash would leave it.
  std::size_t end = 0;
  for (int line = 0; line < 2; ++line) {
    end = text.find('\n', end) + 1;
  }
  write(dir.file("cut.jsonl"), text.substr(0, end));
  Store store(open_database(fresh("fleet"), OpenMode::create, "--db"));
  const FileIngest cut = ingest_file(store, dir.file("cut.jsonl"));
  ASSERT_TRUE(cut.outcome) << cut.error;
  EXPECT_EQ(cut.outcome->rows, 1U);
  const FileIngest whole = ingest_file(store, kBaseDocument);
  ASSERT_TRUE(whole.outcome) << whole.error;
  EXPECT_EQ(whole.outcome->action, IngestAction::replaced);
  EXPECT_EQ(store.counts().rows, 4);
  // And the other way round: the cut stream after the document changes nothing.
  Store other(open_database(fresh("other"), OpenMode::create, "--db"));
  ASSERT_TRUE(ingest_file(other, kBaseDocument).outcome);
  const FileIngest late = ingest_file(other, dir.file("cut.jsonl"));
  ASSERT_TRUE(late.outcome);
  EXPECT_EQ(late.outcome->action, IngestAction::same_run);
  EXPECT_EQ(other.counts().rows, 4);
}

TEST_P(DbStore, ABadFileIsNamedAndSkippedAndTheRestKept) {
  TempDir dir;
  write(dir.file("bad.json"), R"({"schema": "memstress.run/1", "rows": [)");
  write(dir.file("other.json"), R"({"schema": "memstress.run/9"})");
  Store store(open_database(fresh("fleet"), OpenMode::create, "--db"));
  ASSERT_TRUE(ingest_file(store, kBaseDocument).outcome);
  for (const char* name : {"bad.json", "other.json", "missing.json"}) {
    const FileIngest bad = ingest_file(store, dir.file(name));
    EXPECT_FALSE(bad.outcome) << name;
    EXPECT_FALSE(bad.error.empty()) << name;
    EXPECT_NE(describe(bad).find(name), std::string::npos) << describe(bad);
  }
  EXPECT_NE(ingest_file(store, dir.file("other.json")).error.find("unknown schema"), std::string::npos);
  EXPECT_EQ(store.counts().runs, 1);
  EXPECT_EQ(store.counts().rows, 4);
}

TEST_P(DbStore, GoogleBenchmarkJsonKeepsItsGpu) {
  Store store(open_database(fresh("fleet"), OpenMode::create, "--db"));
  const FileIngest bench = ingest_file(store, kBench);
  ASSERT_TRUE(bench.outcome) << bench.error;
  EXPECT_EQ(bench.outcome->action, IngestAction::added);
  EXPECT_EQ(bench.outcome->gpus, 1U);
  EXPECT_GT(store.counts().rows, 0);
  EXPECT_EQ(scalar(store.connection(), "SELECT count(*) FROM gpus WHERE uuid LIKE 'GPU-%'"), 1);
}

TEST_P(DbTransaction, RollsBackUnlessCommitted) {
  Store store(open_database(fresh("fleet"), OpenMode::create, "--db"));
  Connection& c = store.connection();
  const std::string insert =
      "INSERT INTO runs (run_key, kind, format, status, started_at, row_count, source_path, source_sha256) "
      "VALUES ('k', 'memstress results', 'f', 'complete', '', 0, 'p', 's')";
  try {
    Transaction t(c);
    c.exec(insert);
    EXPECT_EQ(scalar(c, "SELECT count(*) FROM runs"), 1);
    c.exec(insert);  // the run key is unique: throws, and the first insert goes with it
    t.commit();
    FAIL() << "a duplicate run key was accepted";
  } catch (const DbError&) {
  }
  EXPECT_EQ(scalar(c, "SELECT count(*) FROM runs"), 0);
  {
    Transaction t(c);
    c.exec(insert);
    t.commit();
  }
  EXPECT_EQ(scalar(c, "SELECT count(*) FROM runs"), 1);
}

TEST_P(DbTransaction, AFileThatFailsMidwayLeavesNothing) {
  // The database refuses the first metric (as a full disk would, midway through the file): the run and
  // the row written before it go with it, and the file is not recorded.
  Store store(open_database(fresh("fleet"), OpenMode::create, "--db"));
  const bool sqlite = store.connection().dialect().name == "sqlite";
  store.connection().exec(
      sqlite
          ? "CREATE TRIGGER refuse BEFORE INSERT ON metrics BEGIN SELECT RAISE(ABORT, 'no room'); END"
          : "CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'no room'; END $$ "
            "LANGUAGE plpgsql; CREATE TRIGGER refuse BEFORE INSERT ON metrics FOR EACH ROW EXECUTE FUNCTION "
            "refuse()");
  EXPECT_THROW(ingest_file(store, kBaseDocument), DbError);
  const Store::Counts c = store.counts();
  EXPECT_EQ(c.files, 0);
  EXPECT_EQ(c.runs, 0);
  EXPECT_EQ(c.rows, 0);
  EXPECT_EQ(c.metrics, 0);
  store.connection().exec(sqlite ? "DROP TRIGGER refuse" : "DROP TRIGGER refuse ON metrics");
  const FileIngest again = ingest_file(store, kBaseDocument);
  ASSERT_TRUE(again.outcome);
  EXPECT_EQ(again.outcome->action, IngestAction::added);
}

INSTANTIATE_TEST_SUITE_P(Backends, DbSchemaOn, ::testing::ValuesIn(db_backends()), backend_name);
INSTANTIATE_TEST_SUITE_P(Backends, DbStore, ::testing::ValuesIn(db_backends()), backend_name);
INSTANTIATE_TEST_SUITE_P(Backends, DbTransaction, ::testing::ValuesIn(db_backends()), backend_name);

}  // namespace
}  // namespace memstress::db
