// The fleet store's writes and reads (store.hpp). Every statement is the SQL both backends accept.

#include "harness/db/store.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "harness/db/schema.hpp"
#include "harness/db/sha256.hpp"
#include "harness/run/result.hpp"

namespace memstress::db {
namespace {

std::int64_t clamp_count(std::uint64_t value) {
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  return static_cast<std::int64_t>(std::min(value, kMax));
}

std::size_t distinct_gpus(const compare::Results& results) {
  std::set<std::string> uuids;
  for (const compare::ResultRow& row : results.rows) {
    if (!row.gpu.uuid.empty()) {
      uuids.insert(row.gpu.uuid);
    }
  }
  return uuids.size();
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
bool better_than(const compare::Results& results, const HeldRun& held) {
  const auto rows = static_cast<std::int64_t>(results.rows.size());
  return rows > held.rows || (rows == held.rows && held.status == "running" && results.status != "running");
}

void write_content(Connection& c, std::int64_t run_id, const compare::Results& results) {
  const auto rank = c.prepare(
      "INSERT INTO ranks (run_id, rank, host, driver, cuda_driver, cuda_runtime, nccl, device_uuid) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  const auto gpu = c.prepare(
      "INSERT INTO gpus (run_id, rank, uuid, name, pci_bus_id, serial) VALUES (?, ?, ?, ?, ?, ?) "
      "ON CONFLICT DO NOTHING");
  std::set<int> ranks_seen;
  for (const compare::RankIdentity& id : results.identities) {
    if (!ranks_seen.insert(id.rank).second) {
      continue;  // a rank listed twice: the first says it
    }
    rank->bind(1, run_id).bind(2, id.rank).bind(3, id.host).bind(4, id.driver).bind(5, id.cuda_driver);
    rank->bind(6, id.cuda_runtime).bind(7, id.nccl).bind(8, id.device_uuid).run();
    for (const compare::SeenGpu& g : id.gpus) {
      if (!g.uuid.empty()) {
        gpu->bind(1, run_id).bind(2, id.rank).bind(3, g.uuid).bind(4, g.name).bind(5, g.pci_bus_id);
        gpu->bind(6, g.serial).run();
      }
    }
  }
  const auto fact = c.prepare("INSERT INTO facts (run_id, position, label, value) VALUES (?, ?, ?, ?)");
  for (std::size_t i = 0; i < results.environment.size(); ++i) {
    fact->bind(1, run_id).bind(2, static_cast<std::int64_t>(i));
    fact->bind(3, results.environment[i].first).bind(4, results.environment[i].second).run();
  }
  const auto row = c.prepare(
      "INSERT INTO rows (run_id, position, workload, case_label, params, allocator, rank, concurrent_ranks, "
      "device_name, device_uuid, verdict, reason, checked, errors) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id");
  const auto job_ranks = static_cast<std::int64_t>(std::max<std::size_t>(1, results.identities.size()));
  const auto metric = c.prepare(
      "INSERT INTO metrics (row_id, name, unit, better, n, median, p10, p90, min, max, mean, stddev, cv) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id");
  const auto sample = c.prepare("INSERT INTO samples (metric_id, position, value) VALUES (?, ?, ?)");
  for (std::size_t i = 0; i < results.rows.size(); ++i) {
    const compare::ResultRow& r = results.rows[i];
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
      metric->step();
      const std::int64_t metric_id = metric->integer(0);
      metric->reset();
      for (std::size_t k = 0; k < m.samples.size(); ++k) {
        sample->bind(1, metric_id).bind(2, static_cast<std::int64_t>(k)).bind(3, m.samples[k]).run();
      }
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

std::string run_key(const compare::Results& results, const std::string& sha256) {
  if (results.kind != compare::ResultsKind::memstress || results.started_at.empty()) {
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
  for (const compare::RankIdentity& id : results.identities) {
    identity += fmt::format("{}\t{}\t{}", id.rank, id.host, id.device_uuid);
    for (const compare::SeenGpu& gpu : id.gpus) {
      identity += "\t" + gpu.uuid;
    }
    identity += "\n";
  }
  return "run:" + sha256_hex(identity);
}

Store::Store(std::unique_ptr<Connection> connection) : connection_(std::move(connection)) {
  migrate(*connection_);
}

IngestOutcome Store::ingest(const compare::Results& results, const std::string& sha256,
                            const std::string& path) {
  Connection& c = *connection_;
  IngestOutcome outcome;
  outcome.rows = results.rows.size();
  outcome.gpus = distinct_gpus(results);
  Transaction transaction(c);
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
    for (const char* table : {"rows", "ranks", "gpus", "facts"}) {
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
    s->bind(1, key).bind(2, compare::to_string(results.kind)).bind(3, results.format).bind(4, results.status);
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
  const auto s = connection_->prepare(R"sql(
SELECT r.workload, r.case_label, r.allocator, m.name, m.unit, m.better, r.device_name,
       COALESCE(k.driver, ''), COALESCE(k.host, ''), r.device_uuid, COALESCE(g.pci_bus_id, ''),
       u.started_at, m.median, r.concurrent_ranks
FROM metrics m
JOIN rows r ON m.row_id = r.id
JOIN runs u ON r.run_id = u.id
LEFT JOIN ranks k ON k.run_id = r.run_id AND k.rank = COALESCE(r.rank, 0)
LEFT JOIN gpus g ON g.run_id = r.run_id AND g.rank = COALESCE(r.rank, 0) AND g.uuid = r.device_uuid
WHERE m.better <> 'none' AND m.median IS NOT NULL AND r.device_uuid <> ''
  AND r.verdict IN ('pass', 'fail') AND (? = '' OR m.name = ?) AND (? = '' OR u.started_at >= ?)
  AND (? = '' OR r.device_uuid = ?) AND (? = '' OR k.host = ?)
ORDER BY u.started_at, r.id, m.id)sql");
  s->bind(1, filter.metric).bind(2, filter.metric).bind(3, filter.since).bind(4, filter.since);
  s->bind(5, filter.gpu_uuid).bind(6, filter.gpu_uuid).bind(7, filter.host).bind(8, filter.host);
  std::vector<MetricObservation> out;
  while (s->step()) {
    MetricObservation o;
    o.workload = s->text(0);
    o.case_label = s->text(1);
    o.allocator = s->text(2);
    o.metric = s->text(3);
    o.unit = s->text(4);
    o.better = better_from_string(s->text(5)).value_or(Better::none);
    o.model = s->text(6);
    o.driver = s->text(7);
    o.host = s->text(8);
    o.gpu_uuid = s->text(9);
    o.pci_bus_id = s->text(10);
    o.started_at = s->text(11);
    o.median = s->real(12);
    o.concurrent_ranks = static_cast<int>(std::max<std::int64_t>(1, s->integer(13)));
    if (std::isfinite(o.median) && o.better != Better::none) {
      out.push_back(std::move(o));
    }
  }
  return out;
}

Store::Counts Store::counts() {
  Connection& c = *connection_;
  return {count(c, "files"), count(c, "runs"), count(c, "rows"), count(c, "metrics"), count(c, "samples")};
}

}  // namespace memstress::db
