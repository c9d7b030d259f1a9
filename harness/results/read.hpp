#pragma once

// A results file read back into rows, whatever wrote it: what `compare` matches and judges, `accept` checks
// and the fleet store (harness/db) keeps. The one reader of results files; two kinds are read:
//
// - memstress results (memstress.run/1, results/README.md): the `.json` document, or the `.jsonl` stream
//   of the same run (its header and rows; a run that crashed has no footer, and a last line cut short
//   by the crash is dropped with a note). Told apart by content, not by the file's name.
// - Google Benchmark JSON (`--benchmark_out_format=json`): each benchmark (its `run_name`) is a row. The
//   per-repetition entries (`run_type` "iteration") are the samples; aggregates ("mean", "median", ...)
//   are not samples: where a file holds aggregates only, the `median` aggregate is the median and there
//   are no samples. Metrics: `real_time` and `cpu_time` in their `time_unit` (lower is better) and every
//   user counter (`*_per_second` higher is better; other counters are reported, not judged). The
//   workload is the family (the name up to the first '/'), the case the rest; the device is the
//   context's `gpu` where memstress_bench wrote one. Rows have no rank.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/results/row.hpp"

namespace memstress {

enum class ResultsKind { memstress, google_benchmark };
std::string_view to_string(ResultsKind kind) noexcept;  // "memstress results", "Google Benchmark JSON"

// Which GPU a row ran on, as an operator finds it in a rack: the host, the rank, the GPU's index on its host
// (its CUDA ordinal), its UUID and PCI bus id. Fields a file does not hold are empty (index -1).
struct GpuIdentity {
  std::string host;
  std::string label;  // "cuda:2", "sim:80G"
  int index = -1;
  std::string uuid;
  std::string pci_bus_id;
};

// "host node7, rank 2, cuda:0 (GPU-4a2c6244-..., PCI 0000:1b:00.0)": the parts known, in that order.
std::string describe(const GpuIdentity& gpu, std::optional<int> rank);

// A row as read back. Not a Row: a Row keeps its parameters in axis order and derives its case label
// from them, while a file's `params` object comes back sorted by name; the case label is kept as written.
struct ResultRow {
  std::string workload;
  std::string case_label;                     // "bytes=64M pattern=random" (axis order)
  std::map<std::string, std::string> params;  // the same as an object
  std::string allocator;
  std::string device;       // GPU model (device name), "NVIDIA H200"; rows match by it
  std::optional<int> rank;  // absent where the format has none
  GpuIdentity gpu;          // label, index and UUID from the row; host and PCI bus id from the environment
  Verdict verdict = Verdict::pass;
  std::string reason;                 // why skipped, failed or errored
  std::uint64_t checked = 0;          // data items verified on the device (0 where the format has none)
  std::uint64_t errors = 0;           // of those, wrong
  std::vector<MetricResult> metrics;  // samples empty where the file kept none
  std::vector<std::string> notes;     // the row's notes (kNotMeasured ones name metrics it could not measure)

  [[nodiscard]] const MetricResult* metric(std::string_view name) const { return find_metric(metrics, name); }
};

// What the run ran on, flattened to labelled values ("driver" = "580.159.04", "GPU 0 memory" = ...).
using Fact = std::pair<std::string, std::string>;

// Who ran it: what identifies a machine and its GPUs. The facts above leave these out on purpose (a
// comparison must not call another host name a change); the fleet store (harness/db) keys by them.
// Every field is "" where the file does not say.
struct SeenGpu {  // a GPU a rank saw (RankIdentity::gpus); GpuIdentity above is the one a row ran on
  std::string uuid;
  std::string name;  // the GPU model, "NVIDIA H200"
  std::string pci_bus_id;
  std::string serial;
};
struct RankIdentity {
  int rank = 0;
  std::string host;
  std::string driver;  // the driver version string, "580.159.04"
  std::string cuda_driver;
  std::string cuda_runtime;
  std::string nccl;
  std::string device_uuid;        // the GPU this rank drove
  std::string device_label;       // as the rank saw it, "cuda:1"
  std::string device_pci_bus_id;  // that GPU's PCI bus id
  std::vector<SeenGpu> gpus;      // every GPU the rank saw
};

struct Results {
  std::filesystem::path path;
  ResultsKind kind = ResultsKind::memstress;
  std::string format;                    // "memstress.run/1 document", "memstress.run/1 stream", ...
  std::vector<Fact> environment;         // in a stable order
  std::vector<RankIdentity> identities;  // one per rank (Google Benchmark JSON: one, from its context)
  std::string started_at;                // UTC, ISO 8601 ("" where the file does not say)
  std::vector<std::string> argv;         // the command line of the run (memstress results)
  std::vector<std::string> in_turn;      // workloads its ranks ran one at a time (run --in-turn)
  std::string status;                    // "complete", "aborted", "running" ("" for Google Benchmark)
  std::string abort_reason;              // why an aborted run ended ("" where it did not say)
  // The ranks of the job as its header says: config.ranks, or the ranks its environment lists, whichever
  // is more (a header that names rank 5 alone promises ranks 0 to 5). 1 for Google Benchmark JSON.
  int ranks = 1;
  std::vector<ResultRow> rows;
  std::vector<std::string> notes;  // worth saying before the comparison (an aborted run, ...)
};

// The largest results file memstress reads (docs/limits.md): the largest real one is 2.5 MB (a 4-GPU
// default run), a run at --max-cases with a hundred repetitions a case some 40 MB.
inline constexpr std::uint64_t kMaxResultsFileBytes = std::uint64_t{256} << 20;

// The text of a results file: a regular file (never a FIFO or a device: read_input_file, Note [Inputs that
// cannot hang or exhaust]) of at most kMaxResultsFileBytes. Throws InputError without the path.
std::string read_results_file(const std::filesystem::path& path);

// Reads a results file of either kind. `role` ("BASE", "NEW", "--from") starts every error message,
// followed by the path: a missing file, not JSON, nested too deep (Note [Bounded JSON input] in
// harness/core/json_input.hpp), an unknown schema or a malformed row throws InputError (exit 2). A field
// of the wrong type is named with its row: "NEW 'new.json': row 3: field params.bytes: expected a string,
// found a number (64)". Every field is read through JsonField, so no nlohmann exception gets out.
Results load_results(const std::filesystem::path& path, std::string_view role);
// The same on the text of a file (what load_results reads), the errors without the role and path: the
// entry the fuzz targets call (fuzz/results.cpp, fuzz/ingest.cpp).
Results parse_results(std::string_view text);

// A row of this process's run as a results file would give it back (accept judges both alike).
ResultRow result_row(const Row& row);
// Fills each row's host and PCI bus id from a run's environment ({"ranks": [...]}: the rank's host name, and
// the PCI bus id of the rank's GPU whose UUID is the row's). What the environment lacks stays empty.
void add_gpu_identity(std::vector<ResultRow>& rows, const nlohmann::json& environment);

// The parts of load_results, by kind, on parsed JSON (for tests).
Results memstress_results(const nlohmann::json& header, const std::vector<nlohmann::json>& rows);
// The same with the rows already read (read_memstress_row), as a document's are while it is parsed.
Results memstress_results(const nlohmann::json& header, std::vector<ResultRow> rows);
// Row `index` (from 0) of memstress results; InputError "row N: ..." where it is malformed.
ResultRow read_memstress_row(const nlohmann::json& row, std::size_t index);
Results google_benchmark_results(const nlohmann::json& document);

// The environment facts of one memstress rank (environment.ranks[i]), each label prefixed with
// `prefix` ("" for rank 0, "rank 1 " for rank 1, ...).
std::vector<Fact> rank_facts(const nlohmann::json& rank, const std::string& prefix);

}  // namespace memstress
