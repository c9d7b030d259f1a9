// memstress db: the fleet store (harness/db). `db ingest FILES... --db F` loads results files into it.
// Exit codes: ingest 0, or 2 when any file was skipped (the others are kept).

#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "apps/commands.hpp"
#include "harness/core/exit_code.hpp"
#include "harness/db/ingest.hpp"

namespace memstress::app {
namespace {

struct DbFlags {
  std::string db;
  std::vector<std::string> files;
};

int ingest_command(const DbFlags& f) {
  db::Store store(db::open_database(f.db, db::OpenMode::create));
  std::size_t added = 0, replaced = 0, kept = 0, skipped = 0;
  for (const std::string& path : f.files) {
    const db::FileIngest file = db::ingest_file(store, path);
    const std::string line = db::describe(file);
    if (!file.outcome) {
      ++skipped;
      fmt::print(stderr, "memstress db ingest: {}\n", line);
      continue;
    }
    fmt::print("{}\n", line);
    switch (file.outcome->action) {
      case db::IngestAction::added:
        ++added;
        break;
      case db::IngestAction::replaced:
        ++replaced;
        break;
      case db::IngestAction::same_run:
      case db::IngestAction::unchanged:
        ++kept;
        break;
    }
  }
  const db::Store::Counts c = store.counts();
  fmt::print(
      "{} file(s): {} added, {} replaced, {} unchanged, {} skipped; '{}' holds {} run(s), {} row(s), {} "
      "metric(s), {} sample(s)\n",
      f.files.size(), added, replaced, kept, skipped, f.db, c.runs, c.rows, c.metrics, c.samples);
  return to_int(skipped > 0 ? ExitCode::bad_input : ExitCode::ok);
}

}  // namespace

Subcommand add_db(CLI::App& app) {
  auto flags = std::make_shared<DbFlags>();
  CLI::App* sub = app.add_subcommand("db", "The fleet store: results from many GPUs in one database");
  sub->require_subcommand(1);
  CLI::App* ingest = sub->add_subcommand(
      "ingest", "Load results files (memstress run --out .json/.jsonl, accept's, Google Benchmark JSON)");
  ingest->add_option("FILES", flags->files, "Results files")->required();
  ingest->add_option("--db", flags->db, "The SQLite file (created when missing)")
      ->required()
      ->check(a_path());
  return {sub, [flags] { return ingest_command(*flags); }};
}

}  // namespace memstress::app
