// memstress db: the fleet store (harness/db). `db ingest FILES|FOLDERS|- --db F` loads results files into it
// (a folder: every results file under it; `-`: the paths standard input lists); `db prune` deletes old runs
// or their samples (Note [Pruning the store]);
// `db outliers --db F` names the GPUs slower than their siblings (Note [Fleet outliers: median and MAD]);
// `db history --gpu UUID|--host H` is a GPU's or node's metrics over time, driver changes marked;
// `db compare --driver A --driver B` judges two drivers over the GPUs that ran under both (Note [Two
// drivers across a fleet]); `db export --format openmetrics` writes the newest rows for Prometheus; `db train
// --profile P --write OUT` sets a profile's floors from the fleet (Note [Floors from the fleet]).
// Exit codes: ingest 0, or 2 when any file or input was skipped (the others are kept); prune 2 when it would
// delete every run without --all; outliers 0 none found,
// 1 any found (for schedulers); compare 1 when a measurement is WORSE; history 2 when nothing matches
// the GPU or host asked for; train 1 when no check could be trained (nothing written); 2 bad input.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
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
#include "harness/db/prune.hpp"

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
  std::size_t batch = db::IngestSettings{}.batch_files;
  bool no_samples = false;
  std::size_t keep_runs = 0;
  bool samples_only = false;
  bool all = false;
  bool dry_run = false;
};

// Without -v, ingest names this many skipped files, then counts the rest.
constexpr std::size_t kSkippedNamed = 3;

// A line of ingest's on stderr, after what stdout holds so far (both sent to one file: never mid-line).
void ingest_note(std::string_view line) {
  std::fflush(stdout);
  fmt::print(stderr, "memstress db ingest: {}\n", line);
}

int ingest_command(const DbFlags& f) {
  if (std::count(f.files.begin(), f.files.end(), "-") > 1) {
    throw InputError(
        "memstress db ingest: '-' given twice: the list of paths is read from standard input once");
  }
  db::Store store(db::open_database(f.db, db::OpenMode::create, "--db"));
  std::size_t added = 0, replaced = 0, kept = 0, skipped = 0;
  db::PathSource source(f.files, std::cin);
  db::IngestSettings settings;
  settings.batch_files = f.batch;
  settings.store.keep_samples = !f.no_samples;
  db::ingest_files(store, source, settings, [&](const db::FileIngest& file) {
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
  const db::Store::Counts c = store.counts(/*samples=*/false);
  fmt::print(
      "{} file(s): {} added, {} replaced, {} unchanged, {} skipped; '{}' holds {} run(s), {} row(s), {} "
      "metric(s)\n",
      added + replaced + kept + skipped, added, replaced, kept, skipped, store.connection().name(), c.runs,
      c.rows, c.metrics);
  return to_int(skipped > 0 ? ExitCode::bad_input : ExitCode::ok);
}

int prune_command(const DbFlags& f) {
  db::PruneOptions options;
  options.before = f.since;
  options.keep_runs = f.keep_runs;
  options.samples_only = f.samples_only;
  options.all = f.all;
  options.dry_run = f.dry_run;
  options.names = {.before = "--before", .keep_runs = "--keep-runs", .all = "--all"};
  // A store that is not there is a mistaken --db, not one to make empty.
  const bool url = f.db.starts_with("postgresql://") || f.db.starts_with("postgres://");
  if (!url && !std::filesystem::exists(f.db)) {
    throw InputError(fmt::format("--db '{}': no such database (memstress db ingest creates one)", f.db));
  }
  db::Store store(db::open_database(f.db, db::OpenMode::create, "--db"));
  const db::PruneOutcome o = db::prune(store, options);
  const std::string what = options.samples_only ? "dropped the samples of" : "deleted";
  fmt::print("{}{} {} of {} run(s) ({} metric(s), {} sample(s)){}; '{}' holds {} run(s)\n",
             options.dry_run ? "would have " : "",
             options.dry_run && !options.samples_only ? "deleted" : what, o.runs_selected, o.runs_held,
             o.metrics, o.samples, options.samples_only ? ", their statistics kept" : "",
             store.connection().name(),
             options.dry_run || options.samples_only ? o.runs_held : o.runs_held - o.runs_selected);
  return to_int(ExitCode::ok);
}

// --since: a date or a UTC time as the results write them (compared as text, so the prefix is enough), a
// real one (2026-02-31 is none).
std::string checked_since(const std::string& since, std::string_view flag = "--since") {
  static const std::regex kIso(R"(\d{4}-\d{2}-\d{2}([T ]\d{2}(:\d{2}(:\d{2}(\.\d+)?)?)?Z?)?)");
  if (!since.empty() && (!std::regex_match(since, kIso) || !valid_iso8601(since, TimeZone::utc_only))) {
    throw InputError(
        fmt::format("{} '{}': expected a UTC date or time, 2026-11-21 or 2026-11-21T14:03:05Z", flag, since));
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
  const db::SeriesFilter filter{f.metric, checked_since(f.since), {}};
  db::Store store(db::open_database(f.db, db::OpenMode::read_only, "--db"));
  db::OutlierAccumulator groups;
  store.for_each_series(filter, [&](const db::Measurement& m, const db::Device& d, const db::GpuSummary& s) {
    groups.add(m, d, s);
  });
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
  db::Store store(db::open_database(f.db, db::OpenMode::read_only, "--db"));
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
  db::Store store(db::open_database(f.db, db::OpenMode::read_only, "--db"));
  db::DriverAccumulator drivers(f.drivers[0], f.drivers[1]);
  store.for_each_series(
      {f.metric, checked_since(f.since), f.drivers},
      [&](const db::Measurement& m, const db::Device& d, const db::GpuSummary& s) { drivers.add(m, d, s); });
  const db::DriverComparison c = drivers.report(options);
  if (c.gpus_both == 0) {
    // Nothing compared is no verdict: a misspelt driver must not pass a scheduler's gate.
    const std::vector<std::string> seen = store.drivers();
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
  db::Store store(db::open_database(f.db, db::OpenMode::read_only, "--db"));
  const db::ExportFilter filter{checked_since(f.since), f.host};
  if (f.out.empty()) {
    db::export_openmetrics(store, filter, [](std::string_view piece) { print_all(piece); });
  } else {
    // Whole or not at all: the textfile collector may read the file at any moment.
    AtomicFileWriter out(f.out, "--out");
    db::export_openmetrics(store, filter, [&](std::string_view piece) { out.write(piece); });
    out.commit();
  }
  return to_int(ExitCode::ok);
}

int train_command(const DbFlags& f) {
  const ProfileChoice choice = choose_profile(f.profile);
  Profile profile = load_profile(choice.path, "--profile", "--train");
  db::Store store(db::open_database(f.db, db::OpenMode::read_only, "--db"));
  db::FleetTrainOptions options;
  options.k = f.k;
  options.driver = f.drivers.empty() ? "" : f.drivers.front();
  options.driver_what = "--driver";
  options.min_gpus = f.min_gpus;
  // Each GPU's value per measurement, as db outliers judges it (its newest runs' median).
  std::vector<db::MetricObservation> fleet;
  store.for_each_series({}, [&](const db::Measurement& m, const db::Device& d, const db::GpuSummary& s) {
    db::MetricObservation o;
    static_cast<MeasurementKey&>(o) = m;
    o.model = m.model;
    o.driver = m.driver;
    o.concurrent_ranks = m.concurrent_ranks;
    o.host = d.host;
    o.gpu_uuid = d.uuid;
    o.pci_bus_id = d.pci_bus_id;
    o.median = s.median;
    fleet.push_back(std::move(o));
  });
  const db::FleetTraining t = db::train_from_fleet(profile, fleet, options);
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
  ingest
      ->add_option("FILES", flags->files,
                   "Results files, folders (every results file under them) or - (the paths standard input "
                   "lists, one a line)")
      ->required();
  ingest
      ->add_option("--db", flags->db,
                   "The SQLite file (created when missing), or postgresql://[user[:password]@][host][:port]/"
                   "database[?param=value...] (the database must exist)")
      ->required()
      ->check(a_path());
  ingest
      ->add_option("--batch", flags->batch, "Files a transaction at most (a crash loses the batch in flight)")
      ->check(CLI::Range(1, 100'000))
      ->capture_default_str();
  ingest->add_flag("--no-samples", flags->no_samples,
                   "Keep each metric's statistics (median, percentiles, mean, ...), not its repetitions");
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
  exporter->add_option("--host", flags->host, "Only the GPUs last seen on this host (a node's own textfile)");
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
  CLI::App* pruner = sub->add_subcommand(
      "prune", "Delete old runs (by age, or beyond each GPU's newest N), or only their samples");
  pruner->add_option("--db", flags->db, kStore)->required()->check(a_path());
  pruner->add_option("--before", flags->since, "Runs started before this UTC date or time");
  pruner
      ->add_option("--keep-runs", flags->keep_runs,
                   "Keep each GPU's newest N runs (a run goes when no GPU keeps it)")
      ->check(CLI::Range(1, 1'000'000));
  pruner->add_flag("--samples-only", flags->samples_only,
                   "Drop the selected runs' samples (repetitions) only: the runs and their statistics stay");
  pruner->add_flag("--all", flags->all, "Let the prune delete every run the store holds");
  pruner->add_flag("--dry-run", flags->dry_run, "Say what would be deleted; change nothing");
  return {sub, [flags, ingest, outliers, history, drivers, train, pruner] {
            if (ingest->parsed()) {
              return ingest_command(*flags);
            }
            if (pruner->parsed()) {
              flags->since = checked_since(flags->since, "--before");
              return prune_command(*flags);
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
