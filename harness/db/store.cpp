// The fleet store's reads (store.hpp); its writes are store_write.cpp's. Every statement is the SQL both
// backends accept.

#include "harness/db/store.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "harness/db/schema.hpp"
#include "harness/db/summary.hpp"
#include "harness/results/row.hpp"

namespace memstress::db {
namespace {

// Series read a statement at a time (by id): a fleet's millions never held as one result (libpq keeps a
// result whole in memory).
constexpr int kSeriesAtOnce = 200'000;

std::int64_t count(Connection& c, std::string_view table) {
  const auto s = c.prepare(fmt::format("SELECT count(*) FROM {}", table));
  return s->step() ? s->integer(0) : 0;
}

// The measurements held, by id.
std::unordered_map<std::int64_t, Measurement> read_measurements(Connection& c) {
  std::unordered_map<std::int64_t, Measurement> out;
  const auto s = c.prepare(
      "SELECT id, workload, case_label, allocator, metric, unit, better, model, driver, concurrent_ranks "
      "FROM measurements");
  while (s->step()) {
    Measurement m;
    m.id = s->integer(0);
    m.workload = s->text(1);
    m.case_label = s->text(2);
    m.allocator = s->text(3);
    m.metric = s->text(4);
    m.unit = s->text(5);
    m.better = better_from_string(s->text_view(6)).value_or(Better::none);
    m.model = s->text(7);
    m.driver = s->text(8);
    m.concurrent_ranks = static_cast<int>(std::max<std::int64_t>(1, s->integer(9)));
    out.emplace(m.id, std::move(m));
  }
  return out;
}

std::unordered_map<std::int64_t, Device> read_devices(Connection& c) {
  std::unordered_map<std::int64_t, Device> out;
  const auto s = c.prepare("SELECT id, uuid, host, pci_bus_id, seen_at FROM devices");
  while (s->step()) {
    out.emplace(s->integer(0), Device{s->integer(0), s->text(1), s->text(2), s->text(3), s->text(4)});
  }
  return out;
}

// The points of one GPU, of one host's runs, or of every GPU (Store::for_each_observation): the columns
// each observation reads, in the same order.
constexpr std::string_view kPointColumns = R"sql(
SELECT m.workload, m.case_label, m.allocator, m.metric, m.unit, m.better, m.model, m.driver, m.concurrent_ranks,
       d.uuid, {host}, {bus}, p.started_at, p.median, p.row_id
)sql";
constexpr std::string_view kPointsOfGpu = R"sql(
FROM devices d
JOIN series s ON s.device_id = d.id
JOIN measurements m ON m.id = s.measurement_id
JOIN metrics p ON p.series_id = s.id
WHERE d.uuid = ? AND (? = '' OR m.metric = ?) AND (? = '' OR p.started_at >= ?))sql";
constexpr std::string_view kPointsOfHost = R"sql(
FROM ranks k
JOIN rows r ON r.run_id = k.run_id AND COALESCE(r.rank, 0) = k.rank
JOIN metrics p ON p.row_id = r.id
JOIN series s ON s.id = p.series_id
JOIN measurements m ON m.id = s.measurement_id
JOIN devices d ON d.id = s.device_id
LEFT JOIN gpus g ON g.run_id = r.run_id AND g.rank = k.rank AND g.uuid = d.uuid
WHERE k.host = ? AND (? = '' OR m.metric = ?) AND (? = '' OR p.started_at >= ?))sql";
constexpr std::string_view kPointsOfAll = R"sql(
FROM metrics p
JOIN series s ON s.id = p.series_id
JOIN measurements m ON m.id = s.measurement_id
JOIN devices d ON d.id = s.device_id
WHERE ? = '' AND (? = '' OR m.metric = ?) AND (? = '' OR p.started_at >= ?))sql";

}  // namespace

Store::Store(std::unique_ptr<Connection> connection) : connection_(std::move(connection)) {
  if (connection_->read_only()) {
    check_current(*connection_);
  } else {
    migrate(*connection_);
  }
}

IngestOutcome Store::ingest(const Results& results, const std::string& sha256, const std::string& path,
                            const IngestOptions& options) {
  IngestBatch batch(*this, options);
  IngestOutcome outcome = batch.add(results, sha256, path);
  batch.commit();
  return outcome;
}

std::vector<MetricObservation> Store::observations(const ObservationFilter& filter) {
  std::vector<MetricObservation> out;
  for_each_observation(filter, [&](const MetricObservation& o) { out.push_back(o); });
  return out;
}

void Store::for_each_observation(const ObservationFilter& filter,
                                 const std::function<void(const MetricObservation&)>& visit) {
  // Of a GPU, through its series (index series_device) and their points (metrics_series); of a host, through
  // its ranks (ranks_host) and their rows; their host and bus as each run gave them where it is a host's,
  // else as the GPU was last seen.
  const bool of_host = !filter.host.empty() && filter.gpu_uuid.empty();
  const std::string_view from = !filter.gpu_uuid.empty() ? kPointsOfGpu
                                : of_host                ? kPointsOfHost
                                                         : kPointsOfAll;
  const std::string sql =
      fmt::format(fmt::runtime(kPointColumns), fmt::arg("host", of_host ? "k.host" : "d.host"),
                  fmt::arg("bus", of_host ? "COALESCE(g.pci_bus_id, '')" : "d.pci_bus_id")) +
      std::string(from);
  const auto s = connection_->prepare(sql);
  const std::string& who = !filter.gpu_uuid.empty() ? filter.gpu_uuid : filter.host;
  s->bind(1, who).bind(2, filter.metric).bind(3, filter.metric).bind(4, filter.since).bind(5, filter.since);
  MetricObservation o;
  while (s->step()) {
    o.median = s->real(13);
    if (!std::isfinite(o.median)) {
      continue;
    }
    o.workload = s->text_view(0);
    o.case_label = s->text_view(1);
    o.allocator = s->text_view(2);
    o.metric = s->text_view(3);
    o.unit = s->text_view(4);
    o.better = better_from_string(s->text_view(5)).value_or(Better::none);
    o.model = s->text_view(6);
    o.driver = s->text_view(7);
    o.concurrent_ranks = static_cast<int>(std::max<std::int64_t>(1, s->integer(8)));
    o.gpu_uuid = s->text_view(9);
    o.host = s->text_view(10);
    o.pci_bus_id = s->text_view(11);
    o.started_at = s->text_view(12);
    o.row_id = s->integer(14);
    if (!filter.host.empty() && o.host != filter.host) {
      continue;  // a GPU and a host both given: the GPU's runs on that host
    }
    visit(o);
  }
}

void Store::for_each_series(
    const SeriesFilter& filter,
    const std::function<void(const Measurement&, const Device&, const GpuSummary&)>& visit) {
  Connection& c = *connection_;
  std::unordered_map<std::int64_t, Measurement> measurements = read_measurements(c);
  const std::size_t held = measurements.size();
  std::erase_if(measurements, [&](const auto& entry) {
    const Measurement& m = entry.second;
    return (!filter.metric.empty() && m.metric != filter.metric) ||
           (!filter.drivers.empty() &&
            std::find(filter.drivers.begin(), filter.drivers.end(), m.driver) == filter.drivers.end());
  });
  if (measurements.empty()) {
    return;
  }
  const std::unordered_map<std::int64_t, Device> devices = read_devices(c);
  const auto emit = [&](std::int64_t measurement, std::int64_t device, const GpuSummary& summary) {
    const auto m = measurements.find(measurement);
    const auto d = devices.find(device);
    if (m != measurements.end() && d != devices.end() && summary.runs > 0) {
      visit(m->second, d->second, summary);
    }
  };
  if (!filter.since.empty()) {
    // The window asked for: its runs' points, a series' together, each series summarised as at ingest.
    const auto s = c.prepare(R"sql(
SELECT p.series_id, s.measurement_id, s.device_id, p.started_at, p.id, p.median
FROM runs u
JOIN rows r ON r.run_id = u.id
JOIN metrics p ON p.row_id = r.id
JOIN series s ON s.id = p.series_id
WHERE u.started_at >= ?
ORDER BY p.series_id)sql");
    s->bind(1, filter.since);
    std::vector<SeriesPoint> points;
    std::int64_t series = 0, measurement = 0, device = 0;
    std::string from;
    const auto flush = [&] {
      if (!points.empty()) {
        emit(measurement, device, summarize_window(points, from));
        points.clear();
      }
    };
    while (s->step()) {
      if (s->integer(0) != series) {
        flush();
        series = s->integer(0);
        measurement = s->integer(1);
        device = s->integer(2);
      }
      if (std::isfinite(s->real(5))) {
        points.push_back({s->text(3), s->integer(4), s->real(5)});
      }
    }
    flush();
    return;
  }
  // The summaries kept: of a few of the measurements, each's (index series (measurement_id, device_id)); else
  // every summary, a page at a time (those of other measurements skipped as they are read).
  const auto read_summary = [&](Statement& s) {
    GpuSummary summary;
    summary.runs = static_cast<std::size_t>(std::max<std::int64_t>(0, s.integer(3)));
    summary.median = s.real(4);
    summary.scatter = s.real(5);
    emit(s.integer(1), s.integer(2), summary);
  };
  // Through the index where it skips most rows (a row read through it costs about three read in order).
  if (measurements.size() * 4 < held) {
    const auto of = c.prepare(
        "SELECT id, measurement_id, device_id, runs, median, scatter FROM series WHERE measurement_id = ? "
        "AND "
        "runs > 0");
    for (const auto& [id, m] : measurements) {
      of->bind(1, id);
      while (of->step()) {
        read_summary(*of);
      }
      of->reset();
    }
    return;
  }
  const auto s = c.prepare(
      "SELECT id, measurement_id, device_id, runs, median, scatter FROM series WHERE id > ? AND runs > 0 "
      "ORDER BY id LIMIT ?");
  std::int64_t after = 0;
  for (;;) {
    s->bind(1, after).bind(2, kSeriesAtOnce);
    int read = 0;
    while (s->step()) {
      ++read;
      after = s->integer(0);
      read_summary(*s);
    }
    s->reset();
    if (read < kSeriesAtOnce) {
      break;
    }
  }
}

std::vector<std::string> Store::gpu_uuids() {
  const auto s = connection_->prepare("SELECT uuid FROM devices");
  std::vector<std::string> out;
  while (s->step()) {
    out.push_back(s->text(0));
  }
  std::ranges::sort(out);
  return out;
}

std::vector<std::string> Store::drivers() {
  const auto s = connection_->prepare("SELECT DISTINCT driver FROM measurements");
  std::vector<std::string> out;
  while (s->step()) {
    out.push_back(s->text(0));
  }
  std::ranges::sort(out);
  return out;
}

Store::Counts Store::counts(bool samples) {
  Connection& c = *connection_;
  Counts out{count(c, "files"), count(c, "runs"), count(c, "rows"), count(c, "metrics"), 0};
  if (samples) {
    const auto s = c.prepare("SELECT COALESCE(sum(sample_count), 0) FROM metrics");
    out.samples = s->step() ? s->integer(0) : 0;
  }
  return out;
}

}  // namespace memstress::db
