// The fleet store's writes and reads (store.hpp). Every statement is the SQL both backends accept.

#include "harness/db/store.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <unordered_map>

#include "harness/db/schema.hpp"
#include "harness/db/sha256.hpp"
#include "harness/results/row.hpp"

namespace memstress::db {
namespace {

// The dialect's writer lock (Dialect::writer_lock), taken inside the transaction.
void serialize_writers(Connection& c) {
  if (!c.dialect().writer_lock.empty()) {
    c.prepare(c.dialect().writer_lock)->run();
  }
}

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

// "[54.87,54.86,null]": the repetitions, a value that is not finite as null (JSON has no NaN).
std::string samples_json(const std::vector<double>& samples) {
  nlohmann::json list = nlohmann::json::array();
  for (const double v : samples) {
    list.push_back(std::isfinite(v) ? nlohmann::json(v) : nlohmann::json());
  }
  return list.dump();
}

struct HeldRun {
  std::int64_t id = 0;
  std::int64_t rows = 0;
  std::string status;
  std::string path;
};

std::optional<HeldRun> held_run(Connection& c, const std::string& key) {
  const auto s = c.prepare("SELECT id, row_count, status, source_path FROM runs WHERE run_key = ?");
  s->bind(1, key);
  if (!s->step()) {
    return std::nullopt;
  }
  return HeldRun{s->integer(0), s->integer(1), s->text(2), s->text(3)};
}

// Whether `results` should replace the run held: more rows, or as many and finished where the held
// one was still running.
bool better_than(const Results& results, const HeldRun& held) {
  const auto rows = static_cast<std::int64_t>(results.rows.size());
  return rows > held.rows || (rows == held.rows && held.status == "running" && results.status != "running");
}

void write_content(Connection& c, std::int64_t run_id, const Results& results) {
  const auto rank = c.prepare(
      "INSERT INTO ranks (run_id, rank, host, driver, cuda_driver, cuda_runtime, nccl, device_uuid) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  const auto gpu = c.prepare(
      "INSERT INTO gpus (run_id, rank, uuid, name, pci_bus_id, serial) VALUES (?, ?, ?, ?, ?, ?) "
      "ON CONFLICT DO NOTHING");
  std::set<int> ranks_seen;
  for (const RankIdentity& id : results.identities) {
    if (!ranks_seen.insert(id.rank).second) {
      continue;  // a rank listed twice: the first says it
    }
    rank->bind(1, run_id).bind(2, id.rank).bind(3, id.host).bind(4, id.driver).bind(5, id.cuda_driver);
    rank->bind(6, id.cuda_runtime).bind(7, id.nccl).bind(8, id.device_uuid).run();
    for (const SeenGpu& g : id.gpus) {
      if (!g.uuid.empty()) {
        gpu->bind(1, run_id).bind(2, id.rank).bind(3, g.uuid).bind(4, g.name).bind(5, g.pci_bus_id);
        gpu->bind(6, g.serial).run();
      }
    }
  }
  nlohmann::json facts = nlohmann::json::array();
  std::string version;
  for (const auto& [label, value] : results.environment) {
    facts.push_back({label, value});
    if (label == "memstress version") {
      version = value;
    }
  }
  c.prepare("UPDATE runs SET memstress_version = ?, environment = ? WHERE id = ?")
      ->bind(1, version)
      .bind(2, facts.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
      .bind(3, run_id)
      .run();
  const auto row = c.prepare(
      "INSERT INTO rows (run_id, position, workload, case_label, params, allocator, rank, concurrent_ranks, "
      "device_name, device_uuid, verdict, reason, checked, errors) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id");
  const auto job_ranks = static_cast<std::int64_t>(std::max<std::size_t>(1, results.identities.size()));
  const auto metric = c.prepare(
      "INSERT INTO metrics (row_id, name, unit, better, n, median, p10, p90, min, max, mean, stddev, cv, "
      "sample_count, samples) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (std::size_t i = 0; i < results.rows.size(); ++i) {
    const ResultRow& r = results.rows[i];
    row->bind(1, run_id).bind(2, static_cast<std::int64_t>(i)).bind(3, r.workload).bind(4, r.case_label);
    const bool alone =
        std::find(results.in_turn.begin(), results.in_turn.end(), r.workload) != results.in_turn.end();
    row->bind(5, nlohmann::json(r.params).dump()).bind(6, r.allocator).bind(7, r.rank);
    row->bind(8, alone ? std::int64_t{1} : job_ranks).bind(9, r.device).bind(10, r.gpu.uuid);
    row->bind(11, to_string(r.verdict)).bind(12, r.reason);
    row->bind(13, clamp_count(r.checked)).bind(14, clamp_count(r.errors));
    row->step();
    const std::int64_t row_id = row->integer(0);
    row->reset();
    for (const MetricResult& m : r.metrics) {
      const Summary& s = m.summary;
      metric->bind(1, row_id).bind(2, m.name).bind(3, m.unit).bind(4, to_string(m.better));
      metric->bind(5, static_cast<std::int64_t>(s.n)).bind(6, s.median).bind(7, s.p10).bind(8, s.p90);
      metric->bind(9, s.min).bind(10, s.max).bind(11, s.mean).bind(12, s.stddev).bind(13, s.cv);
      metric->bind(14, static_cast<std::int64_t>(m.samples.size())).bind(15, samples_json(m.samples)).run();
    }
  }
}

void record_file(Connection& c, const std::string& sha256, const std::string& path, std::int64_t run_id) {
  c.prepare("INSERT INTO files (sha256, path, run_id, ingested_at) VALUES (?, ?, ?, ?)")
      ->bind(1, sha256)
      .bind(2, path)
      .bind(3, run_id)
      .bind(4, utc_now_iso8601())
      .run();
}

std::int64_t count(Connection& c, std::string_view table) {
  const auto s = c.prepare(fmt::format("SELECT count(*) FROM {}", table));
  return s->step() ? s->integer(0) : 0;
}

}  // namespace

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

Store::Store(std::unique_ptr<Connection> connection) : connection_(std::move(connection)) {
  if (connection_->read_only()) {
    check_current(*connection_);
  } else {
    migrate(*connection_);
  }
}

IngestOutcome Store::ingest(const Results& results, const std::string& sha256, const std::string& path) {
  Connection& c = *connection_;
  IngestOutcome outcome;
  outcome.rows = results.rows.size();
  outcome.gpus = distinct_gpus(results);
  Transaction transaction(c);
  serialize_writers(c);
  {
    const auto known = c.prepare("SELECT path FROM files WHERE sha256 = ?");
    known->bind(1, sha256);
    if (known->step()) {
      outcome.action = IngestAction::unchanged;
      outcome.held_from = known->text(0);
      return outcome;  // nothing written: the transaction rolls back
    }
  }
  const std::string key = run_key(results, sha256);
  std::int64_t run_id = 0;
  if (const std::optional<HeldRun> held = held_run(c, key)) {
    run_id = held->id;
    outcome.held_from = held->path;
    if (!better_than(results, *held)) {
      outcome.action = IngestAction::same_run;
      outcome.rows = static_cast<std::size_t>(held->rows);
      record_file(c, sha256, path, run_id);
      transaction.commit();
      return outcome;
    }
    outcome.action = IngestAction::replaced;
    for (const char* table : {"rows", "ranks", "gpus"}) {
      c.prepare(fmt::format("DELETE FROM {} WHERE run_id = ?", table))->bind(1, run_id).run();
    }
    c.prepare(
         "UPDATE runs SET format = ?, status = ?, row_count = ?, source_path = ?, source_sha256 = ? "
         "WHERE id = ?")
        ->bind(1, results.format)
        .bind(2, results.status)
        .bind(3, static_cast<std::int64_t>(results.rows.size()))
        .bind(4, path)
        .bind(5, sha256)
        .bind(6, run_id)
        .run();
  } else {
    const auto s = c.prepare(
        "INSERT INTO runs (run_key, kind, format, status, started_at, row_count, source_path, source_sha256) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id");
    s->bind(1, key).bind(2, to_string(results.kind)).bind(3, results.format).bind(4, results.status);
    s->bind(5, results.started_at).bind(6, static_cast<std::int64_t>(results.rows.size())).bind(7, path);
    s->bind(8, sha256);
    s->step();
    run_id = s->integer(0);
    s->reset();
  }
  write_content(c, run_id, results);
  record_file(c, sha256, path, run_id);
  transaction.commit();
  return outcome;
}

std::vector<MetricObservation> Store::observations(const ObservationFilter& filter) {
  std::vector<MetricObservation> out;
  for_each_observation(filter, [&](const MetricObservation& o) { out.push_back(o); });
  return out;
}

void Store::for_each_observation(const ObservationFilter& filter,
                                 const std::function<void(const MetricObservation&)>& visit) {
  Connection& c = *connection_;
  // Who ran each run's rows (host, driver, bus ids) and when, read once: a few rows per run, where joining
  // them to each of the million metrics of a fleet would cost most of the query (scripts/dev/fleet-bench).
  struct RankFacts {
    std::string host, driver;
    std::vector<std::pair<std::string, std::string>> buses;  // GPU UUID, PCI bus id
  };
  const auto rank_key = [](std::int64_t run, std::int64_t rank) {
    static_assert(kMaxRank < (1 << 24), "a rank must fit below the run id in the key");
    return static_cast<std::uint64_t>(run) << 24U ^ static_cast<std::uint64_t>(rank);
  };
  std::unordered_map<std::int64_t, std::string> started;  // run id ->
  std::unordered_map<std::uint64_t, RankFacts> ranks;     // rank_key ->
  {
    const auto runs = c.prepare("SELECT id, started_at FROM runs WHERE ? = '' OR started_at >= ?");
    runs->bind(1, filter.since).bind(2, filter.since);
    while (runs->step()) {
      started.emplace(runs->integer(0), runs->text(1));
    }
    const auto k = c.prepare("SELECT run_id, rank, host, driver FROM ranks");
    while (k->step()) {
      ranks.emplace(rank_key(k->integer(0), k->integer(1)), RankFacts{k->text(2), k->text(3), {}});
    }
    const auto g = c.prepare("SELECT run_id, rank, uuid, pci_bus_id FROM gpus");
    while (g->step()) {
      ranks[rank_key(g->integer(0), g->integer(1))].buses.emplace_back(g->text(2), g->text(3));
    }
  }
  const auto s = c.prepare(R"sql(
SELECT r.run_id, COALESCE(r.rank, 0), r.workload, r.case_label, r.allocator, m.name, m.unit, m.better,
       r.device_name, r.device_uuid, m.median, r.concurrent_ranks, r.id
FROM metrics m
JOIN rows r ON m.row_id = r.id
WHERE m.better <> 'none' AND m.median IS NOT NULL AND r.device_uuid <> ''
  AND r.verdict IN ('pass', 'fail') AND (? = '' OR m.name = ?) AND (? = '' OR r.device_uuid = ?))sql");
  s->bind(1, filter.metric).bind(2, filter.metric).bind(3, filter.gpu_uuid).bind(4, filter.gpu_uuid);
  const RankFacts unknown;
  MetricObservation o;     // reused: its strings keep their capacity from row to row
  bool row_known = false;  // o holds the row of o.row_id (a row's metrics come one after another)
  while (s->step()) {
    o.median = s->real(10);
    o.better = better_from_string(s->text_view(7)).value_or(Better::none);
    if (!std::isfinite(o.median) || o.better == Better::none) {
      continue;
    }
    const std::int64_t row = s->integer(12);
    if (!row_known || row != o.row_id) {
      row_known = false;
      o.row_id = row;
      const std::int64_t run = s->integer(0);
      const auto when = started.find(run);
      if (when == started.end()) {
        continue;  // before --since
      }
      const auto facts = ranks.find(rank_key(run, s->integer(1)));
      const RankFacts& who = facts != ranks.end() ? facts->second : unknown;
      if (!filter.host.empty() && who.host != filter.host) {
        continue;
      }
      o.workload = s->text_view(2);
      o.case_label = s->text_view(3);
      o.allocator = s->text_view(4);
      o.model = s->text_view(8);
      o.gpu_uuid = s->text_view(9);
      o.concurrent_ranks = static_cast<int>(std::max<std::int64_t>(1, s->integer(11)));
      o.driver = who.driver;
      o.host = who.host;
      o.pci_bus_id.clear();
      for (const auto& [uuid, bus] : who.buses) {
        if (uuid == o.gpu_uuid) {
          o.pci_bus_id = bus;
        }
      }
      o.started_at = when->second;
      row_known = true;
    }
    o.metric = s->text_view(5);
    o.unit = s->text_view(6);
    visit(o);
  }
}

std::vector<std::string> Store::gpu_uuids() {
  const auto s = connection_->prepare("SELECT DISTINCT device_uuid FROM rows WHERE device_uuid <> ''");
  std::vector<std::string> out;
  while (s->step()) {
    out.push_back(s->text(0));
  }
  std::ranges::sort(out);
  return out;
}

Store::Counts Store::counts() {
  Connection& c = *connection_;
  const auto samples = c.prepare("SELECT COALESCE(sum(sample_count), 0) FROM metrics");
  return {count(c, "files"), count(c, "runs"), count(c, "rows"), count(c, "metrics"),
          samples->step() ? samples->integer(0) : 0};
}

}  // namespace memstress::db
