// memstress db: the fleet store (harness/db). `db ingest FILES... --db F` loads results files into it;
// `db outliers --db F` names the GPUs slower than their siblings (Note [Fleet outliers: median and MAD]);
// `db history --gpu UUID|--host H` is a GPU's or node's metrics over time, driver changes marked;
// `db compare --driver A --driver B` judges two drivers over the GPUs that ran under both (Note [Two
// drivers across a fleet]); `db export --format openmetrics` writes the newest rows for Prometheus; `db train
// --profile P --write OUT` sets a profile's floors from the fleet (Note [Floors from the fleet]).
// Exit codes: ingest 0, or 2 when any file was skipped (the others are kept); outliers 0 none found,
// 1 any found (for schedulers); compare 1 when a measurement is WORSE; history 2 when nothing matches
// the GPU or host asked for; train 1 when no check could be trained (nothing written); 2 bad input.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <regex>

#include "apps/commands.hpp"
#include "apps/shipped_profile.hpp"
#include "harness/compare/metric_compare.hpp"
#include "harness/core/atomic_file.hpp"
#include "harness/core/exit_code.hpp"
#include "harness/core/iso_time.hpp"
#include "harness/core/json_text.hpp"
#include "harness/core/text_table.hpp"
#include "harness/db/export.hpp"
#include "harness/db/fleet_train.hpp"
#include "harness/db/format.hpp"
#include "harness/db/history.hpp"
#include "harness/db/ingest.hpp"
#include "harness/db/outliers.hpp"

namespace memstress::app {
namespace {

constexpr const char* kStore = "The store: an SQLite file, or a postgresql:// URL";

struct DbFlags {
  std::string db;
  std::vector<std::string> files;
  std::string metric;
  std::string since;
  double threshold = db::OutlierOptions{}.threshold;
  std::size_t min_gpus = db::OutlierOptions{}.min_gpus;
  bool groups = false;
  std::string format = "table";
  std::string gpu;
  std::string host;
  std::vector<std::string> drivers;
  std::string threshold_pct = "5";
  std::string out;
  bool verbose = false;
  std::string profile;
  std::string write;
  double k = db::FleetTrainOptions{}.k;
};

// Without -v, ingest names this many skipped files, then counts the rest.
constexpr std::size_t kSkippedNamed = 3;

// A line of ingest's on stderr, after what stdout holds so far (both sent to one file: never mid-line).
void ingest_note(std::string_view line) {
  std::fflush(stdout);
  fmt::print(stderr, "memstress db ingest: {}\n", line);
}

int ingest_command(const DbFlags& f) {
  db::Store store(db::open_database(f.db, db::OpenMode::create));
  std::size_t added = 0, replaced = 0, kept = 0, skipped = 0;
  const std::vector<std::filesystem::path> paths(f.files.begin(), f.files.end());
  db::ingest_files(store, paths, 0, [&](const db::FileIngest& file) {
    const std::string line = terminal_text(db::describe(file));  // names and messages from files
    if (!file.outcome) {
      ++skipped;
      if (f.verbose || skipped <= kSkippedNamed) {
        ingest_note(line);
      }
      return;
    }
    if (f.verbose) {
      fmt::print("{}\n", line);
    }
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
  });
  if (!f.verbose && skipped > kSkippedNamed) {
    ingest_note(fmt::format("{} more file(s) skipped (-v names every file and what became of it)",
                            skipped - kSkippedNamed));
  }
  const db::Store::Counts c = store.counts();
  fmt::print(
      "{} file(s): {} added, {} replaced, {} unchanged, {} skipped; '{}' holds {} run(s), {} row(s), {} "
      "metric(s), {} sample(s)\n",
      f.files.size(), added, replaced, kept, skipped, store.connection().name(), c.runs, c.rows, c.metrics,
      c.samples);
  return to_int(skipped > 0 ? ExitCode::bad_input : ExitCode::ok);
}

// --since: a date or a UTC time as the results write them (compared as text, so the prefix is enough), a
// real one (2026-02-31 is none).
std::string checked_since(const std::string& since) {
  static const std::regex kIso(R"(\d{4}-\d{2}-\d{2}([T ]\d{2}(:\d{2}(:\d{2}(\.\d+)?)?)?Z?)?)");
  if (!since.empty() && (!std::regex_match(since, kIso) || !valid_iso8601(since, TimeZone::utc_only))) {
    throw InputError(
        fmt::format("--since '{}': expected a UTC date or time, 2026-11-21 or 2026-11-21T14:03:05Z", since));
  }
  return since;
}

int outliers_command(const DbFlags& f) {
  db::OutlierOptions options;
  options.threshold = f.threshold;
  options.min_gpus = f.min_gpus;
  options.keep_groups = f.groups;
  if (f.groups && f.format != "json") {
    throw InputError("--groups: only with --format json (every GPU's value, for the report's fleet page)");
  }
  const db::ObservationFilter filter{f.metric, checked_since(f.since), "", ""};
  db::Store store(db::open_database(f.db, db::OpenMode::read_only));
  db::OutlierAccumulator groups;
  store.for_each_observation(filter, [&](const db::MetricObservation& o) { groups.add(o); });
  const db::OutlierReport report = groups.report(options);
  const std::string out = f.format == "json" ? json_text(db::outliers_json(report, options), 2) + "\n"
                                             : db::format_outliers_table(report, options);
  print_all(out);
  return to_int(report.outliers.empty() ? ExitCode::ok : ExitCode::check_failed);
}

// --gpu: a whole UUID, or the start of one (with or without "GPU-", as nvidia-smi -L and the docs shorten
// them) that names one GPU of the store; a start that several share is refused, naming them.
std::string resolve_gpu(db::Store& store, const std::string& gpu) {
  if (gpu.empty()) {
    return gpu;
  }
  const std::string prefix = gpu.starts_with("GPU-") || gpu.starts_with("MIG-") ? gpu : "GPU-" + gpu;
  std::vector<std::string> matches;
  for (std::string& uuid : store.gpu_uuids()) {
    if (uuid == gpu || uuid == prefix) {
      return uuid;
    }
    if (uuid.starts_with(prefix) || uuid.starts_with(gpu)) {
      matches.push_back(std::move(uuid));
    }
  }
  if (matches.size() > 1) {
    constexpr std::size_t kNamed = 5;
    const std::vector<std::string> named(
        matches.begin(), matches.begin() + static_cast<std::ptrdiff_t>(std::min(matches.size(), kNamed)));
    throw InputError(terminal_text(fmt::format(
        "--gpu '{}': {} GPUs of '{}' start with it ({}{}); give more of the UUID", gpu, matches.size(),
        store.connection().name(), fmt::join(named, ", "), matches.size() > kNamed ? ", ..." : "")));
  }
  return matches.empty() ? gpu : matches.front();
}

int history_command(const DbFlags& f) {
  if (f.gpu.empty() == f.host.empty()) {
    throw InputError("memstress db history: give one of --gpu UUID or --host H");
  }
  db::Store store(db::open_database(f.db, db::OpenMode::read_only));
  const std::string gpu = resolve_gpu(store, f.gpu);
  const std::vector<db::HistorySeries> series =
      db::history(store.observations({f.metric, checked_since(f.since), gpu, f.host}));
  if (series.empty()) {
    throw InputError(fmt::format("--db '{}': no measurement of {} '{}'{}", store.connection().name(),
                                 f.gpu.empty() ? "host" : "GPU", f.gpu.empty() ? f.host : f.gpu,
                                 f.metric.empty() ? "" : fmt::format(" with metric '{}'", f.metric)));
  }
  print_all(f.format == "json" ? json_text(db::history_json(series), 2) + "\n"
                               : db::format_history_table(series));
  return to_int(ExitCode::ok);
}

int compare_command(const DbFlags& f) {
  if (f.drivers.size() != 2 || f.drivers[0] == f.drivers[1]) {
    throw InputError("memstress db compare: give two different drivers, --driver BASE --driver NEW");
  }
  compare::CompareOptions options;
  options.threshold_pct = compare::parse_threshold(f.threshold_pct, "--threshold");
  db::Store store(db::open_database(f.db, db::OpenMode::read_only));
  db::DriverAccumulator drivers(f.drivers[0], f.drivers[1]);
  store.for_each_observation({f.metric, checked_since(f.since), "", ""},
                             [&](const db::MetricObservation& o) { drivers.add(o); });
  const db::DriverComparison c = drivers.report(options);
  if (c.gpus_both == 0) {
    // Nothing compared is no verdict: a misspelt driver must not pass a scheduler's gate.
    std::vector<std::string> seen(drivers.drivers_seen().begin(), drivers.drivers_seen().end());
    throw InputError(
        fmt::format("--driver {} --driver {}: no GPU in '{}' ran under both{}; drivers held: {}",
                    f.drivers[0], f.drivers[1], store.connection().name(),
                    f.metric.empty() ? "" : fmt::format(" (metric '{}')", f.metric),
                    seen.empty() ? std::string("none") : fmt::format("{}", fmt::join(seen, ", "))));
  }
  print_all(f.format == "json" ? json_text(db::driver_json(c), 2) + "\n" : db::format_driver_table(c));
  return to_int(c.regressed() ? ExitCode::check_failed : ExitCode::ok);
}

int export_command(const DbFlags& f) {
  db::Store store(db::open_database(f.db, db::OpenMode::read_only));
  const std::string text = db::export_openmetrics(store, checked_since(f.since));
  if (f.out.empty()) {
    print_all(text);
  } else {
    // Whole or not at all: the textfile collector may read the file at any moment.
    write_file_atomically(f.out, text, "--out");
  }
  return to_int(ExitCode::ok);
}

int train_command(const DbFlags& f) {
  const ProfileChoice choice = choose_profile(f.profile);
  Profile profile = load_profile(choice.path);
  db::Store store(db::open_database(f.db, db::OpenMode::read_only));
  db::FleetTrainOptions options;
  options.k = f.k;
  options.driver = f.drivers.empty() ? "" : f.drivers.front();
  options.min_gpus = f.min_gpus;
  const db::FleetTraining t = db::train_from_fleet(profile, store.observations({}), options);
  std::vector<TableLine> table{{"CHECK", "GPUS", "RANKS", "MEDIAN", "SCALED MAD", "BOUND"}};
  for (const db::FleetBound& b : t.trained) {
    table.push_back({terminal_text(b.check), std::to_string(b.gpus), std::to_string(b.ranks),
                     fmt::format("{:.4g}", b.median), fmt::format("{:.4g}", b.spread),
                     fmt::format("{} {:.4g}", b.at_least ? ">=" : "<=", b.bound)});
  }
  std::string out = t.trained.empty() ? std::string() : render_table(table);
  for (const Untrained& u : t.untrained) {
    out += fmt::format("not trained: {}: {}\n", terminal_text(u.check), u.why);
  }
  if (t.trained.empty()) {
    print_all(out);
    fmt::print(stderr, "memstress db train: no check of {} trained from the fleet; {} not written\n",
               choice.path, f.write);
    return to_int(ExitCode::check_failed);
  }
  write_file_atomically(f.write, to_yaml(profile), "--write");
  out += fmt::format("{} of {} checks trained from {} GPU model {} under driver {} (k = {}); written to {}\n",
                     t.trained.size(), t.trained.size() + t.untrained.size(), store.connection().name(),
                     profile.gpu, t.driver, f.k, f.write);
  print_all(out);
  return to_int(ExitCode::ok);
}

// --min-gpus of outliers and train: a median and a MAD of fewer than 3 GPUs say nothing.
void add_min_gpus(CLI::App& sub, std::size_t& min_gpus, const char* help) {
  sub.add_option("--min-gpus", min_gpus, help)->check(CLI::Range(3, 1'000'000))->capture_default_str();
}

}  // namespace

Subcommand add_db(CLI::App& app) {
  auto flags = std::make_shared<DbFlags>();
  CLI::App* sub = app.add_subcommand("db", "The fleet store: results from many GPUs in one database");
  sub->require_subcommand(1);
  CLI::App* ingest = sub->add_subcommand(
      "ingest", "Load results files (memstress run --out .json/.jsonl, accept's, Google Benchmark JSON)");
  ingest->add_option("FILES", flags->files, "Results files")->required();
  ingest
      ->add_option("--db", flags->db,
                   "The SQLite file (created when missing), or postgresql://[user[:password]@][host][:port]/"
                   "database[?param=value...] (the database must exist)")
      ->required()
      ->check(a_path());
  ingest->add_flag("-v,--verbose", flags->verbose,
                   "A line for every file (added, replaced, unchanged or skipped, and why); without it, the "
                   "totals and the first skipped files");
  CLI::App* outliers = sub->add_subcommand(
      "outliers", "GPUs whose medians lie beyond median and MAD of their siblings (same model and driver)");
  outliers->add_option("--db", flags->db, kStore)->required()->check(a_path());
  outliers->add_option("--metric", flags->metric, "Only this metric (e.g. GB/s)");
  outliers->add_option("--since", flags->since, "Only runs started at or after this UTC date or time");
  outliers->add_option("--threshold", flags->threshold, "Outlier beyond this many scaled MADs")
      ->check(a_finite_number())
      ->check(CLI::Range(1.0, 100.0))
      ->capture_default_str();
  add_min_gpus(*outliers, flags->min_gpus, "Judge only groups of at least this many GPUs");
  outliers->add_flag(
      "--groups", flags->groups,
      "With --format json: also every judged group with each GPU's value (memstress report draws them)");
  outliers->add_option("--format", flags->format, "stdout format: table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  CLI::App* history = sub->add_subcommand(
      "history", "A GPU's or node's metrics over time, oldest first, with driver changes marked");
  history->add_option("--db", flags->db, kStore)->required()->check(a_path());
  history->add_option("--gpu", flags->gpu,
                      "The GPU's UUID (GPU-...), or enough of its start to name one GPU");
  history->add_option("--host", flags->host, "Every GPU of this host");
  history->add_option("--metric", flags->metric, "Only this metric (e.g. GB/s)");
  history->add_option("--since", flags->since, "Only runs started at or after this UTC date or time");
  history->add_option("--format", flags->format, "stdout format: table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  CLI::App* drivers = sub->add_subcommand(
      "compare", "Two drivers over every GPU that ran under both, judged as memstress compare judges");
  drivers->add_option("--db", flags->db, kStore)->required()->check(a_path());
  drivers->add_option("--driver", flags->drivers, "BASE then NEW (twice: --driver 570.x --driver 580.y)")
      ->required()
      ->expected(1)
      ->take_all();
  drivers->add_option("--metric", flags->metric, "Only this metric (e.g. GB/s)");
  drivers->add_option("--since", flags->since, "Only runs started at or after this UTC date or time");
  drivers->add_option("--threshold", flags->threshold_pct, "Smallest change of the median that counts, %")
      ->capture_default_str();
  drivers->add_option("--format", flags->format, "stdout format: table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  CLI::App* exporter =
      sub->add_subcommand("export", "The newest row of each measurement on each GPU, for Prometheus");
  exporter->add_option("--db", flags->db, kStore)->required()->check(a_path());
  exporter->add_option("--format", flags->format, "openmetrics (the text format node_exporter reads)")
      ->check(CLI::IsMember({"openmetrics"}))
      ->required();
  exporter->add_option("--since", flags->since, "Only runs started at or after this UTC date or time");
  exporter->add_option("--out", flags->out,
                       "Write here (atomically) instead of stdout, e.g. "
                       "/var/lib/node_exporter/textfile/memstress.prom");
  CLI::App* train = sub->add_subcommand(
      "train",
      "An acceptance profile's floors from the fleet: median - k scaled MADs per check (per model, driver)");
  train->add_option("--db", flags->db, kStore)->required()->check(a_path());
  train->add_option("--profile", flags->profile, "The profile whose checks to train (a file, or h100, h200)")
      ->required();
  train->add_option("--write", flags->write, "Write the trained profile here")->required()->check(a_path());
  train
      ->add_option("--driver", flags->drivers,
                   "Only results under this driver (needed where the store holds several)")
      ->expected(1);
  train->add_option("--k", flags->k, "Scaled MADs below the fleet's median (above, where lower is better)")
      ->check(a_finite_number())
      ->check(CLI::Range(0.5, 20.0))
      ->capture_default_str();
  add_min_gpus(*train, flags->min_gpus, "Train a check only from at least this many GPUs");
  return {sub, [flags, ingest, outliers, history, drivers, train] {
            if (ingest->parsed()) {
              return ingest_command(*flags);
            }
            if (outliers->parsed()) {
              return outliers_command(*flags);
            }
            if (history->parsed()) {
              return history_command(*flags);
            }
            if (train->parsed()) {
              return train_command(*flags);
            }
            return drivers->parsed() ? compare_command(*flags) : export_command(*flags);
          }};
}

}  // namespace memstress::app
