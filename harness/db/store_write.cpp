// The fleet store's writes: files ingested in batches (store.hpp, Note [Ingesting in batches] and Note
// [Summaries kept at ingest] in summary.hpp), each table's rows of a file in one statement (Note [Many rows a
// statement]).

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "harness/db/sha256.hpp"
#include "harness/db/summary.hpp"
#include "harness/results/row.hpp"

namespace memstress::db {
namespace {

std::int64_t clamp_count(std::uint64_t value) {
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  return static_cast<std::int64_t>(std::min(value, kMax));
}

std::size_t distinct_gpus(const Results& results) {
  std::set<std::string> uuids;
  for (const ResultRow& row : results.rows) {
    if (!row.gpu.uuid.empty()) {
      uuids.insert(row.gpu.uuid);
    }
  }
  return uuids.size();
}

// "[54.87,54.86,null]": the repetitions, a value that is not finite as null (JSON has no NaN); each the
// shortest text that reads back as the same double.
std::string samples_json(const std::vector<double>& samples) {
  fmt::memory_buffer out;
  out.push_back('[');
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (i > 0) {
      out.push_back(',');
    }
    if (std::isfinite(samples[i])) {
      fmt::format_to(std::back_inserter(out), "{}", samples[i]);
    } else {
      fmt::format_to(std::back_inserter(out), "null");
    }
  }
  out.push_back(']');
  return fmt::to_string(out);
}

// Whether `results` should replace the run held (`rows` rows, `status`): more rows, or as many and finished
// where the held one was still running.
bool better_than(const Results& results, std::int64_t rows, std::string_view status) {
  const auto have = static_cast<std::int64_t>(results.rows.size());
  return have > rows || (have == rows && status == "running" && results.status != "running");
}

// Who ran a rank's rows: the first identity the file lists for the rank.
struct RankFacts {
  std::string_view host, driver;
  const RankIdentity* identity = nullptr;
};

std::string join_key(std::initializer_list<std::string_view> parts, int ranks) {
  std::string key;
  for (const std::string_view p : parts) {
    key += p;
    key += '\x1f';
  }
  key += std::to_string(ranks);
  return key;
}

struct PairHash {
  std::size_t operator()(const std::pair<std::int64_t, std::int64_t>& p) const noexcept {
    return std::hash<std::int64_t>{}(p.first) * 1'000'003U ^ std::hash<std::int64_t>{}(p.second);
  }
};

}  // namespace

struct IngestBatch::State {
  State(Connection& c, IngestOptions o) : connection(c), options(o), transaction(c), cache(c) {}

  Connection& connection;
  IngestOptions options;
  Transaction transaction;
  StatementCache cache;
  bool measurements_loaded = false;
  std::unordered_map<std::string, std::int64_t> measurements;  // join_key of its fields -> id
  struct DeviceState {
    std::int64_t id = 0;
    std::string seen_at;
  };
  std::unordered_map<std::string, DeviceState> devices;  // UUID ->
  std::unordered_set<std::int64_t> series_loaded;        // devices whose series are in `series`
  std::unordered_map<std::pair<std::int64_t, std::int64_t>, std::int64_t, PairHash> series;
  std::unordered_set<std::int64_t> dirty;  // series to summarise again at commit
  std::set<std::int64_t> latest_devices;   // devices whose latest_rows to make again at commit

  std::int64_t measurement_id(const Measurement& m);
  void resolve_devices(const std::map<std::string, std::pair<std::string, std::string>>& seen,
                       const std::string& started_at);
  void resolve_series(const std::vector<std::pair<std::int64_t, std::int64_t>>& wanted);
  void forget_run(std::int64_t run_id);
  void write_content(std::int64_t run_id, const Results& results);
};

std::int64_t IngestBatch::State::measurement_id(const Measurement& m) {
  if (!measurements_loaded) {
    Statement& s = cache.get(
        "SELECT id, workload, case_label, allocator, metric, unit, better, model, driver, concurrent_ranks "
        "FROM measurements");
    while (s.step()) {
      measurements.emplace(join_key({s.text_view(1), s.text_view(2), s.text_view(3), s.text_view(4),
                                     s.text_view(5), s.text_view(6), s.text_view(7), s.text_view(8)},
                                    static_cast<int>(s.integer(9))),
                           s.integer(0));
    }
    s.reset();
    measurements_loaded = true;
  }
  const std::string key = join_key(
      {m.workload, m.case_label, m.allocator, m.metric, m.unit, to_string(m.better), m.model, m.driver},
      m.concurrent_ranks);
  const auto at = measurements.find(key);
  if (at != measurements.end()) {
    return at->second;
  }
  Statement& s = cache.get(
      "INSERT INTO measurements (workload, case_label, allocator, metric, unit, better, model, driver, "
      "concurrent_ranks) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id");
  s.bind(1, m.workload).bind(2, m.case_label).bind(3, m.allocator).bind(4, m.metric).bind(5, m.unit);
  s.bind(6, to_string(m.better)).bind(7, m.model).bind(8, m.driver).bind(9, m.concurrent_ranks);
  s.step();
  const std::int64_t id = s.integer(0);
  s.reset();
  measurements.emplace(key, id);
  return id;
}

// Each GPU of the file (UUID -> host, PCI bus id) known by its id, and as last seen where this run is its
// newest.
void IngestBatch::State::resolve_devices(
    const std::map<std::string, std::pair<std::string, std::string>>& seen, const std::string& started_at) {
  ManyRows lookup("SELECT id, uuid, seen_at FROM devices WHERE uuid IN (", "?", 1, ")");
  for (const auto& [uuid, where] : seen) {
    if (!devices.contains(uuid)) {
      lookup.add(uuid);
    }
  }
  lookup.run(cache, [&](Statement& s) { devices[s.text(1)] = {s.integer(0), s.text(2)}; });
  ManyRows insert("INSERT INTO devices (uuid, host, pci_bus_id, seen_at) VALUES", "(?, ?, ?, ?)", 4,
                  "RETURNING id, uuid");
  ManyRows update(
      "UPDATE devices SET host = v.column2, pci_bus_id = v.column3, seen_at = v.column4 FROM (VALUES",
      "(CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT))", 4,
      ") AS v WHERE devices.id = v.column1");
  for (const auto& [uuid, where] : seen) {
    const auto at = devices.find(uuid);
    if (at == devices.end()) {
      insert.add(uuid).add(where.first).add(where.second).add(started_at);
    } else if (started_at >= at->second.seen_at) {
      update.add(at->second.id).add(where.first).add(where.second).add(started_at);
      at->second.seen_at = started_at;
    }
  }
  insert.run(cache, [&](Statement& s) {
    devices[s.text(1)] = {s.integer(0), started_at};
    series_loaded.insert(s.integer(0));  // a new GPU has no series yet
  });
  update.run(cache);
}

// The series of (measurement, device) pairs known by their ids, made where new.
void IngestBatch::State::resolve_series(const std::vector<std::pair<std::int64_t, std::int64_t>>& wanted) {
  ManyRows lookup("SELECT id, measurement_id, device_id FROM series WHERE device_id IN (", "?", 1, ")");
  for (const auto& [m, device] : wanted) {
    if (series_loaded.insert(device).second) {
      lookup.add(device);
    }
  }
  lookup.run(cache, [&](Statement& s) { series[{s.integer(1), s.integer(2)}] = s.integer(0); });
  ManyRows insert("INSERT INTO series (measurement_id, device_id, runs, window_from) VALUES", "(?, ?, 0, '')",
                  2, "RETURNING id, measurement_id, device_id");
  std::set<std::pair<std::int64_t, std::int64_t>> added;
  for (const auto& pair : wanted) {
    if (!series.contains(pair) && added.insert(pair).second) {
      insert.add(pair.first).add(pair.second);
    }
  }
  insert.run(cache, [&](Statement& s) { series[{s.integer(1), s.integer(2)}] = s.integer(0); });
}

// A run's content deleted, to be written again from a fuller file: the series it had points in are read
// whole at commit, and the newest rows of its GPUs made again.
void IngestBatch::State::forget_run(std::int64_t run_id) {
  std::vector<std::int64_t> touched;
  Statement& s = cache.get(
      "SELECT DISTINCT p.series_id FROM rows r JOIN metrics p ON p.row_id = r.id WHERE r.run_id = ? AND "
      "p.series_id IS NOT NULL");
  s.bind(1, run_id);
  while (s.step()) {
    touched.push_back(s.integer(0));
  }
  s.reset();
  reopen_windows(cache, touched);
  dirty.insert(touched.begin(), touched.end());
  Statement& latest = cache.get("SELECT DISTINCT device_id FROM latest_rows WHERE run_id = ?");
  latest.bind(1, run_id);
  while (latest.step()) {
    latest_devices.insert(latest.integer(0));
  }
  latest.reset();
  for (const char* table : {"rows", "ranks", "gpus"}) {
    cache.get(fmt::format("DELETE FROM {} WHERE run_id = ?", table)).bind(1, run_id).run();
  }
}

void IngestBatch::State::write_content(std::int64_t run_id, const Results& results) {
  // Ranks, and the GPUs each saw.
  ManyRows ranks(
      "INSERT INTO ranks (run_id, rank, host, driver, cuda_driver, cuda_runtime, nccl, device_uuid) VALUES",
      "(?, ?, ?, ?, ?, ?, ?, ?)", 8, "");
  ManyRows gpus("INSERT INTO gpus (run_id, rank, uuid, name, pci_bus_id, serial) VALUES",
                "(?, ?, ?, ?, ?, ?)", 6, "ON CONFLICT DO NOTHING");
  std::map<int, RankFacts> facts;
  for (const RankIdentity& id : results.identities) {
    if (!facts.emplace(id.rank, RankFacts{id.host, id.driver, &id}).second) {
      continue;  // a rank listed twice: the first says it
    }
    ranks.add(run_id).add(id.rank).add(id.host).add(id.driver).add(id.cuda_driver).add(id.cuda_runtime);
    ranks.add(id.nccl).add(id.device_uuid);
    for (const SeenGpu& g : id.gpus) {
      if (!g.uuid.empty()) {
        gpus.add(run_id).add(id.rank).add(g.uuid).add(g.name).add(g.pci_bus_id).add(g.serial);
      }
    }
  }
  ranks.run(cache);
  gpus.run(cache);

  // The GPUs the rows name, where they ran (the rank's host, the PCI bus id its identity gives the GPU).
  const RankFacts unknown;
  const auto facts_of = [&](const ResultRow& r) -> const RankFacts& {
    const auto at = facts.find(r.rank.value_or(0));
    return at != facts.end() ? at->second : unknown;
  };
  std::map<std::string, std::pair<std::string, std::string>> seen;
  for (const ResultRow& r : results.rows) {
    if (r.gpu.uuid.empty() || seen.contains(r.gpu.uuid)) {
      continue;
    }
    const RankFacts& who = facts_of(r);
    std::string bus;
    if (who.identity != nullptr) {
      for (const SeenGpu& g : who.identity->gpus) {
        if (g.uuid == r.gpu.uuid) {
          bus = g.pci_bus_id;
        }
      }
    }
    seen.emplace(r.gpu.uuid, std::pair(std::string(who.host), std::move(bus)));
  }
  resolve_devices(seen, results.started_at);

  // Each metric that is a point of a series (Note [Summaries kept at ingest]): its measurement and GPU.
  const auto job_ranks = static_cast<int>(std::max<std::size_t>(1, results.identities.size()));
  std::vector<std::vector<std::int64_t>> measurement_of(
      results.rows.size());  // per row, per metric (0: none)
  std::vector<std::pair<std::int64_t, std::int64_t>> wanted;
  for (std::size_t i = 0; i < results.rows.size(); ++i) {
    const ResultRow& r = results.rows[i];
    measurement_of[i].assign(r.metrics.size(), 0);
    if (r.gpu.uuid.empty() || (r.verdict != Verdict::pass && r.verdict != Verdict::fail)) {
      continue;
    }
    const bool alone =
        std::find(results.in_turn.begin(), results.in_turn.end(), r.workload) != results.in_turn.end();
    Measurement m;
    m.workload = r.workload;
    m.case_label = r.case_label;
    m.allocator = r.allocator;
    m.model = r.device;
    m.driver = facts_of(r).driver;
    m.concurrent_ranks = alone ? 1 : job_ranks;
    const std::int64_t device = devices.at(r.gpu.uuid).id;
    for (std::size_t k = 0; k < r.metrics.size(); ++k) {
      const MetricResult& metric = r.metrics[k];
      if (metric.better == Better::none || !std::isfinite(metric.summary.median)) {
        continue;
      }
      m.metric = metric.name;
      m.unit = metric.unit;
      m.better = metric.better;
      measurement_of[i][k] = measurement_id(m);
      wanted.emplace_back(measurement_of[i][k], device);
    }
  }
  resolve_series(wanted);

  // The rows, then their metrics, then each GPU's newest row of each case.
  ManyRows rows(
      "INSERT INTO rows (run_id, position, workload, case_label, params, allocator, rank, concurrent_ranks, "
      "device_name, device_uuid, verdict, reason, checked, errors) VALUES",
      "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", 14, "RETURNING id, position");
  for (std::size_t i = 0; i < results.rows.size(); ++i) {
    const ResultRow& r = results.rows[i];
    const bool alone =
        std::find(results.in_turn.begin(), results.in_turn.end(), r.workload) != results.in_turn.end();
    rows.add(run_id).add(i).add(r.workload).add(r.case_label).own(nlohmann::json(r.params).dump());
    rows.add(r.allocator);
    if (r.rank) {
      rows.add(*r.rank);
    } else {
      rows.add_null();
    }
    rows.add(alone ? 1 : job_ranks).add(r.device).add(r.gpu.uuid).add(to_string(r.verdict)).add(r.reason);
    rows.add(clamp_count(r.checked)).add(clamp_count(r.errors));
  }
  std::vector<std::int64_t> row_ids(results.rows.size(), 0);
  rows.run(cache, [&](Statement& s) {
    const auto position = static_cast<std::size_t>(s.integer(1));
    if (position < row_ids.size()) {
      row_ids[position] = s.integer(0);
    }
  });
  ManyRows metrics(
      "INSERT INTO metrics (row_id, name, unit, better, n, median, p10, p90, min, max, mean, stddev, cv, "
      "sample_count, samples, series_id, started_at) VALUES",
      "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", 17, "");
  ManyRows latest(
      "INSERT INTO latest_rows (device_id, workload, case_label, allocator, row_id, run_id, started_at) "
      "VALUES",
      "(?, ?, ?, ?, ?, ?, ?)", 7,
      "ON CONFLICT (device_id, workload, case_label, allocator) DO UPDATE SET row_id = excluded.row_id, "
      "run_id = excluded.run_id, started_at = excluded.started_at WHERE excluded.started_at > "
      "latest_rows.started_at OR (excluded.started_at = latest_rows.started_at AND excluded.run_id > "
      "latest_rows.run_id)");
  std::set<std::tuple<std::string_view, std::string_view, std::string_view, std::string_view>> latest_keys;
  for (std::size_t i = 0; i < results.rows.size(); ++i) {
    const ResultRow& r = results.rows[i];
    for (std::size_t k = 0; k < r.metrics.size(); ++k) {
      const MetricResult& m = r.metrics[k];
      const Summary& s = m.summary;
      metrics.add(row_ids[i]).add(m.name).add(m.unit).add(to_string(m.better));
      metrics.add(static_cast<std::int64_t>(s.n)).add(s.median).add(s.p10).add(s.p90).add(s.min).add(s.max);
      metrics.add(s.mean).add(s.stddev).add(s.cv);
      if (options.keep_samples) {
        metrics.add(m.samples.size()).own(samples_json(m.samples));
      } else {
        metrics.add(0).add("[]");
      }
      if (measurement_of[i][k] != 0) {
        const std::int64_t id = series.at({measurement_of[i][k], devices.at(r.gpu.uuid).id});
        dirty.insert(id);
        metrics.add(id).add(results.started_at);
      } else {
        metrics.add_null().add_null();
      }
    }
    // A case the run measured twice on one GPU: its first row, as the newest rows were read before.
    if (!r.gpu.uuid.empty() &&
        latest_keys.emplace(r.gpu.uuid, r.workload, r.case_label, r.allocator).second) {
      latest.add(devices.at(r.gpu.uuid).id).add(r.workload).add(r.case_label).add(r.allocator);
      latest.add(row_ids[i]).add(run_id).add(results.started_at);
    }
  }
  metrics.run(cache);
  latest.run(cache);
}

IngestBatch::IngestBatch(Store& store, IngestOptions options)
    : state_(std::make_unique<State>(store.connection(), options)) {
  Connection& c = store.connection();
  if (!c.dialect().writer_lock.empty()) {
    state_->cache.get(std::string(c.dialect().writer_lock)).run();
  }
}

IngestBatch::~IngestBatch() = default;

IngestOutcome IngestBatch::add(const Results& results, const std::string& sha256, const std::string& path) {
  State& b = *state_;
  IngestOutcome outcome;
  outcome.rows = results.rows.size();
  outcome.gpus = distinct_gpus(results);
  const std::string key = run_key(results, sha256);
  // What the store holds of this content, and of this run.
  Statement& known = b.cache.get(
      "SELECT f.path, u.id, u.row_count, u.status, u.source_path FROM (SELECT 1 AS one) x "
      "LEFT JOIN files f ON f.sha256 = ? LEFT JOIN runs u ON u.run_key = ?");
  known.bind(1, sha256).bind(2, key);
  known.step();
  const bool file_known = !known.is_null(0);
  const bool run_held = !known.is_null(1);
  const std::string held_path = known.text(file_known ? 0 : 4);
  const std::int64_t held_id = known.integer(1);
  const std::int64_t held_rows = known.integer(2);
  const std::string held_status = known.text(3);
  known.reset();
  if (file_known) {
    outcome.action = IngestAction::unchanged;
    outcome.held_from = held_path;
    return outcome;
  }
  std::int64_t run_id = held_id;
  nlohmann::json facts = nlohmann::json::array();
  std::string version;
  for (const auto& [label, value] : results.environment) {
    facts.push_back({label, value});
    if (label == "memstress version") {
      version = value;
    }
  }
  const std::string environment = facts.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (run_held) {
    outcome.held_from = held_path;
    if (!better_than(results, held_rows, held_status)) {
      outcome.action = IngestAction::same_run;
      outcome.rows = static_cast<std::size_t>(held_rows);
    } else {
      outcome.action = IngestAction::replaced;
      b.forget_run(run_id);
      b.cache
          .get(
              "UPDATE runs SET format = ?, status = ?, row_count = ?, source_path = ?, source_sha256 = ?, "
              "memstress_version = ?, environment = ? WHERE id = ?")
          .bind(1, results.format)
          .bind(2, results.status)
          .bind(3, static_cast<std::int64_t>(results.rows.size()))
          .bind(4, path)
          .bind(5, sha256)
          .bind(6, version)
          .bind(7, environment)
          .bind(8, run_id)
          .run();
      b.write_content(run_id, results);
    }
  } else {
    Statement& s = b.cache.get(
        "INSERT INTO runs (run_key, kind, format, status, started_at, row_count, source_path, source_sha256, "
        "memstress_version, environment) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id");
    s.bind(1, key).bind(2, to_string(results.kind)).bind(3, results.format).bind(4, results.status);
    s.bind(5, results.started_at).bind(6, static_cast<std::int64_t>(results.rows.size())).bind(7, path);
    s.bind(8, sha256).bind(9, version).bind(10, environment);
    s.step();
    run_id = s.integer(0);
    s.reset();
    b.write_content(run_id, results);
  }
  b.cache.get("INSERT INTO files (sha256, path, run_id, ingested_at) VALUES (?, ?, ?, ?)")
      .bind(1, sha256)
      .bind(2, path)
      .bind(3, run_id)
      .bind(4, utc_now_iso8601())
      .run();
  return outcome;
}

void IngestBatch::commit() {
  State& b = *state_;
  refresh_series(b.cache, std::vector<std::int64_t>(b.dirty.begin(), b.dirty.end()));
  rebuild_latest(b.cache, std::vector<std::int64_t>(b.latest_devices.begin(), b.latest_devices.end()));
  b.transaction.commit();
}

std::string_view to_string(IngestAction action) noexcept {
  switch (action) {
    case IngestAction::added:
      return "added";
    case IngestAction::replaced:
      return "replaced";
    case IngestAction::same_run:
      return "same run";
    case IngestAction::unchanged:
      return "unchanged";
  }
  return "?";
}

std::string run_key(const Results& results, const std::string& sha256) {
  if (results.kind != ResultsKind::memstress || results.started_at.empty()) {
    return "sha256:" + sha256;
  }
  std::string identity = fmt::format("memstress\n{}\n", results.started_at);
  for (const std::string& word : results.argv) {
    identity += word + "\t";
  }
  identity += "\n";
  for (const auto& [label, value] : results.environment) {
    if (label == "memstress version" || label == "memstress git sha") {
      identity += value + "\n";
    }
  }
  for (const RankIdentity& id : results.identities) {
    identity += fmt::format("{}\t{}\t{}", id.rank, id.host, id.device_uuid);
    for (const SeenGpu& gpu : id.gpus) {
      identity += "\t" + gpu.uuid;
    }
    identity += "\n";
  }
  return "run:" + sha256_hex(identity);
}

}  // namespace memstress::db
