// A store that the previous memstress wrote (schema version 1: tests/data/fleet/store-v1.sql, the rows it
// wrote for the fleet's twelve files) is upgraded by this one, on either backend, and then answers every
// query as a store this memstress made from the same files does.

#include <gtest/gtest.h>

#include <sstream>

#include "harness/db/history.hpp"
#include "harness/db/ingest.hpp"
#include "harness/db/outliers.hpp"
#include "harness/db/schema.hpp"
#include "tests/unit/db_backend.hpp"
#include "tests/unit/db_fleet_files.hpp"

namespace memstress::db {
namespace {

using DbUpgrade = OnBackend;

// The files in the order the version 1 store was made from them.
std::vector<std::filesystem::path> fleet_files() {
  std::vector<std::filesystem::path> out;
  for (const char* dir : {"driver-570/", ""}) {
    for (int node = 1; node <= 6; ++node) {
      out.push_back(kFleet / fmt::format("{}node0{}.json", dir, node));
    }
  }
  return out;
}

// A version 1 store on this backend: its schema by the version 1 migration, its rows as that memstress wrote.
std::string version_one_store(const std::string& url) {
  auto c = open_database(url, OpenMode::create, "--db");
  migrate(*c, 1);
  const bool postgresql = c->dialect().name == "postgresql";
  std::istringstream lines(memstress::testing::slurp(kFleet / "store-v1.sql"));
  std::string line;
  std::string sql;
  while (std::getline(lines, line)) {
    if (line.starts_with("--")) {
      continue;
    }
    if (postgresql) {  // the generated ids as they were written
      for (const char* table :
           {"INSERT INTO runs VALUES", "INSERT INTO \"rows\" VALUES", "INSERT INTO metrics VALUES"}) {
        if (line.starts_with(table)) {
          line.insert(std::string(table).size() - std::string(" VALUES").size(), " OVERRIDING SYSTEM VALUE");
        }
      }
    }
    sql += line + "\n";
  }
  c->exec(sql);
  if (postgresql) {
    for (const char* table : {"runs", "rows", "metrics"}) {
      c->exec(fmt::format("SELECT setval(pg_get_serial_sequence('{0}', 'id'), (SELECT max(id) FROM {0}))",
                          table));
    }
  }
  return url;
}

std::string outliers_text(Store& store) {
  OutlierAccumulator all;
  store.for_each_series(
      {}, [&](const Measurement& m, const Device& d, const GpuSummary& s) { all.add(m, d, s); });
  const OutlierReport r = all.report({});
  std::string out =
      fmt::format("{} GPUs, {} judged, {} too small\n", r.gpus, r.groups_judged, r.groups_too_small);
  for (const Outlier& o : r.outliers) {
    out += fmt::format("{} {} {} {} {} {:.9g} {:.9g}\n", o.gpu_uuid, o.host, o.pci_bus_id, o.case_label,
                       o.metric, o.value, o.score);
  }
  return out;
}

std::string history_text(Store& store) {
  return format_history_table(
             history(store.observations({"", "", "GPU-00000000-0000-0000-0000-000000000004", ""}))) +
         format_history_table(history(store.observations({"GB/s", "", "", "node02"})));
}

std::string drivers_text(Store& store) {
  DriverAccumulator drivers("570.195.03", "580.159.04");
  store.for_each_series(
      {"", "", {"570.195.03", "580.159.04"}},
      [&](const Measurement& m, const Device& d, const GpuSummary& s) { drivers.add(m, d, s); });
  return format_driver_table(drivers.report({}));
}

TEST_P(DbUpgrade, AStoreTheVersionBeforeWroteIsUpgradedAndAnswersAsANewOne) {
  const std::string old = version_one_store(fresh("v1"));
  {
    auto c = open_database(old, OpenMode::read_only, "--db");
    EXPECT_EQ(schema_version(*c), 1);
    // A query does not upgrade: it says how.
    try {
      Store store(std::move(c));
      FAIL() << "a query read a version 1 store";
    } catch (const DbError& e) {
      EXPECT_NE(std::string(e.what()).find("memstress db ingest with this memstress upgrades it"),
                std::string::npos)
          << e.what();
    }
  }
  Store upgraded(open_database(old, OpenMode::create, "--db"));
  EXPECT_EQ(schema_version(upgraded.connection()), latest_schema_version());
  const Store::Counts held = upgraded.counts();
  EXPECT_EQ(held.runs, 12);
  EXPECT_EQ(held.rows, 48);
  EXPECT_EQ(held.metrics, 144);
  EXPECT_EQ(held.samples, 720);

  Store made(open_database(fresh("v2"), OpenMode::create, "--db"));
  for (const std::filesystem::path& file : fleet_files()) {
    ASSERT_TRUE(ingest_file(made, file).outcome) << file;
  }
  EXPECT_EQ(answers(upgraded), answers(made));
  EXPECT_EQ(answers(upgraded, {"GB/s", "2026-11-20", {}}), answers(made, {"GB/s", "2026-11-20", {}}));
  EXPECT_EQ(outliers_text(upgraded), outliers_text(made));
  EXPECT_NE(outliers_text(upgraded).find("GPU-00000000-0000-0000-0000-000000000004 node04 0000:04:00.0"),
            std::string::npos)
      << outliers_text(upgraded);
  EXPECT_EQ(history_text(upgraded), history_text(made));
  EXPECT_EQ(drivers_text(upgraded), drivers_text(made));
  EXPECT_EQ(upgraded.gpu_uuids(), made.gpu_uuids());

  // And it takes files as any store does: known ones unchanged, new ones added.
  const FileIngest again = ingest_file(upgraded, kFleet / "node01.json");
  ASSERT_TRUE(again.outcome) << again.error;
  EXPECT_EQ(again.outcome->action, IngestAction::unchanged);
  const FileIngest next =
      ingest_file(upgraded, fleet_run(dir_.path(), "node01", "2026-11-28T11:00:00Z", 1.0));
  ASSERT_TRUE(next.outcome) << next.error;
  EXPECT_EQ(next.outcome->action, IngestAction::added);
  EXPECT_EQ(upgraded.counts().runs, 13);
}

INSTANTIATE_TEST_SUITE_P(Backends, DbUpgrade, ::testing::ValuesIn(db_backends()), backend_name);

}  // namespace
}  // namespace memstress::db
