// memstress db: the fleet store (harness/db). `db ingest FILES... --db F` loads results files into it;
// `db outliers --db F` names the GPUs slower than their siblings (Note [Fleet outliers: median and MAD]).
// Exit codes: ingest 0, or 2 when any file was skipped (the others are kept); outliers 0 none found,
// 1 any found (for schedulers), 2 bad input.

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <regex>

#include "apps/commands.hpp"
#include "harness/core/exit_code.hpp"
#include "harness/core/json_text.hpp"
#include "harness/db/format.hpp"
#include "harness/db/ingest.hpp"
#include "harness/db/outliers.hpp"

namespace memstress::app {
namespace {

struct DbFlags {
  std::string db;
  std::vector<std::string> files;
  std::string metric;
  std::string since;
  double threshold = db::OutlierOptions{}.threshold;
  std::size_t min_gpus = db::OutlierOptions{}.min_gpus;
  std::string format = "table";
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

// --since: a date or a UTC time as the results write them (compared as text, so the prefix is enough).
std::string checked_since(const std::string& since) {
  static const std::regex kIso(R"(\d{4}-\d{2}-\d{2}([T ]\d{2}(:\d{2}(:\d{2}(\.\d+)?)?)?Z?)?)");
  if (!since.empty() && !std::regex_match(since, kIso)) {
    throw InputError(
        fmt::format("--since '{}': expected a UTC date or time, 2026-11-21 or 2026-11-21T14:03:05Z", since));
  }
  return since;
}

int outliers_command(const DbFlags& f) {
  db::OutlierOptions options;
  options.threshold = f.threshold;
  options.min_gpus = f.min_gpus;
  const db::ObservationFilter filter{f.metric, checked_since(f.since)};
  db::Store store(db::open_database(f.db, db::OpenMode::existing));
  const db::OutlierReport report = db::find_outliers(store.observations(filter), options);
  const std::string out = f.format == "json" ? json_text(db::outliers_json(report, options), 2) + "\n"
                                             : db::format_outliers_table(report, options);
  std::fputs(out.c_str(), stdout);
  return to_int(report.outliers.empty() ? ExitCode::ok : ExitCode::check_failed);
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
  CLI::App* outliers = sub->add_subcommand(
      "outliers", "GPUs whose medians lie beyond median and MAD of their siblings (same model and driver)");
  outliers->add_option("--db", flags->db, "The SQLite file")->required()->check(a_path());
  outliers->add_option("--metric", flags->metric, "Only this metric (e.g. GB/s)");
  outliers->add_option("--since", flags->since, "Only runs started at or after this UTC date or time");
  outliers->add_option("--threshold", flags->threshold, "Outlier beyond this many scaled MADs")
      ->check(CLI::Range(1.0, 100.0))
      ->capture_default_str();
  outliers->add_option("--min-gpus", flags->min_gpus, "Judge only groups of at least this many GPUs")
      ->check(CLI::Range(3, 1'000'000))
      ->capture_default_str();
  outliers->add_option("--format", flags->format, "stdout format: table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  return {sub,
          [flags, ingest] { return ingest->parsed() ? ingest_command(*flags) : outliers_command(*flags); }};
}

}  // namespace memstress::app
