#pragma once

// The results model: one Row per case (per rank and device), one RunRecord per invocation. Its JSON
// form is the versioned schema in results/schema/ (kSchemaId); `compare`, `report` and CI read it.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/core/json_field.hpp"
#include "harness/stats/summary.hpp"

namespace memstress {

inline constexpr const char* kSchemaId = "memstress.run/1";
// Ranks are numbered from 0; a results file that names a larger one is damaged (a job of a million ranks
// is far beyond any machine).
inline constexpr int kMaxRank = 999'999;
// A rank is a straggler in a case's metric when it is worse than the median across ranks by more than
// this fraction (run --straggler-pct; harness/results/rank_summary.hpp).
inline constexpr double kDefaultStragglerThreshold = 0.10;

enum class Verdict { pass, fail, skip, error };
std::string_view to_string(Verdict verdict) noexcept;
std::optional<Verdict> verdict_from_string(std::string_view text) noexcept;

// Which way is good, for comparisons: bandwidth is higher-better, latency lower-better.
enum class Better { higher, lower, none };
std::string_view to_string(Better better) noexcept;
std::optional<Better> better_from_string(std::string_view text) noexcept;

// A case that could not measure a metric it would have (NVML does not give it on this GPU) says so in a note
// that starts with this and names the metric: "not measured: nvlink.errors (no NVLink is active)". accept
// skips a check on such a metric rather than failing it.
inline constexpr std::string_view kNotMeasured = "not measured: ";
// That note: "not measured: METRIC (WHY)".
[[nodiscard]] std::string not_measured_note(std::string_view metric, std::string_view why);

struct MetricResult {
  std::string name;
  std::string unit;  // "GB/s", "us", "bytes", "ops/s", "count", "ratio"
  Better better = Better::none;
  Summary summary;
  std::vector<double> samples;  // kept: repetitions are few and compare needs them
};

// The metric of that name, or nullptr.
const MetricResult* find_metric(const std::vector<MetricResult>& metrics, std::string_view name) noexcept;

// Note [The key of a measurement]. One measurement, across the ranks of a run, the runs of a fleet and the
// versions of a GPU's driver, is named by its workload, its case (the label of its parameters, in axis
// order), its allocator and its metric; the metric's unit and direction go with it. Whatever groups
// measurements (the rank summary, the fleet store's observations) keys them by this.
struct MeasurementKey {
  std::string workload;
  std::string case_label;  // "bytes=64M pattern=random"
  std::string allocator;
  std::string metric;
  std::string unit;
  Better better = Better::none;
};

struct DeviceRef {
  std::string label;  // "cuda:0", "sim:80G"
  std::string kind;   // "cuda" or "sim"
  int ordinal = 0;
  std::string name;
  std::string uuid;
  std::string node;  // under mpirun, the node's name (World::node); else empty
};

// Its nlohmann::json member's constructor is not declared noexcept; a null value allocates nothing.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct Row {
  std::string workload;
  std::vector<std::pair<std::string, std::string>> params;  // in the workload's axis order
  std::string allocator;
  int rank = 0;
  DeviceRef device;
  std::vector<MetricResult> metrics;
  // The metric the row heads with, a name among its metrics (its workload's headline,
  // harness/run/workload.hpp): what the run table shows and a person quotes first. Empty for a row without
  // metrics, and in older files.
  std::string headline;
  std::uint64_t checked = 0;  // data items verified on the device
  std::uint64_t errors = 0;   // of those, wrong
  Verdict verdict = Verdict::pass;
  std::string reason;              // why skipped / failed / errored
  std::vector<std::string> notes;  // anything else worth reading
  // A self-test (Workload::self_test): what its pass means ("planted leak found"); empty for a measurement.
  std::string self_test;
  nlohmann::json allocator_stats;  // the allocator's memory_stats after the case
  std::string started_at;          // UTC, ISO 8601
  double seconds = 0;              // wall time of the case, warm-up included

  [[nodiscard]] std::string case_label() const;  // "bytes=64M pattern=random"
  [[nodiscard]] const MetricResult* metric(std::string_view name) const;
};

enum class RunStatus { running, complete, aborted };
std::string_view to_string(RunStatus status) noexcept;

// NOLINTNEXTLINE(bugprone-exception-escape): as Row's (its nlohmann::json members)
struct RunRecord {
  std::string tool_version;
  std::string git_sha;
  std::vector<std::string> argv;
  std::string started_at;
  std::string ended_at;
  RunStatus status = RunStatus::running;
  std::string abort_reason;
  nlohmann::json config;       // device, allocator, repetitions, warm-up, seed, …
  nlohmann::json environment;  // {"ranks": [ per-rank environment ]}
  std::vector<Row> rows;
  int ranks = 1;  // ranks in the job; with more than one the document has a rank_summary
  double straggler_threshold = kDefaultStragglerThreshold;
};

void to_json(nlohmann::json& j, const MetricResult& m);
void to_json(nlohmann::json& j, const Row& row);
// Reads a metric as to_json writes it, named `name` (its key); null numbers read as NaN. Throws
// InputError naming the field (its path in `j`) on anything else.
[[nodiscard]] MetricResult read_metric(const JsonField& j, std::string name);
// read_metric, keeping m.name.
void from_json(const nlohmann::json& j, MetricResult& m);
// Reads a row as to_json writes it. Throws nlohmann::json::exception or InputError.
void from_json(const nlohmann::json& j, Row& row);
// The run without its rows (the first line of the JSON Lines stream; document.cpp).
nlohmann::json header_json(const RunRecord& run);
// The whole document (with "rank_summary" when the run had several ranks).
nlohmann::json run_json(const RunRecord& run);

// Counts of each verdict; the process exit code follows from them (any fail or error: 1).
struct VerdictCounts {
  int pass = 0, fail = 0, skip = 0, error = 0;
  void add(Verdict verdict) noexcept;
};
VerdictCounts count_verdicts(const std::vector<Row>& rows) noexcept;
// The document without its rows: the header, and the summary of `rows` rows of those verdict counts (the rank
// summary from run.rows, where it holds them and the run had ranks).
nlohmann::json run_skeleton(const RunRecord& run, const VerdictCounts& counts, std::size_t rows);

// "2026-11-21T14:03:05Z", or with `milliseconds` "2026-11-21T14:03:05.042Z"
std::string utc_now_iso8601(bool milliseconds = false);

}  // namespace memstress
