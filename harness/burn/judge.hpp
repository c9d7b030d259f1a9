#pragma once

// A burn's verdict, interval by interval and per GPU.
//
// Note [Judging a burn]. Rank 0 judges each interval's rows of every rank as they arrive, so a fault FAILs in
// the interval it begins, naming the GPU (rank, device, UUID, host). Per GPU and interval:
// - data: any wrong word of the stress (with its address) FAILs; so does a row the harness marked error;
// - the GEMM canary: each result's hash must equal the GPU's own first one (a single GPU votes against its
//   first result), and the first hashes of the GPUs of one model and GEMM library must agree: a GPU outside a
//   strict majority FAILs, and where there is none (two GPUs that differ) every GPU of the tie FAILs;
// - health: a new uncorrectable ECC error, a new uncorrectable row remap, a remap pending or failed, an XID
//   event, an NVLink error, another process holding a context on the GPU, or health or telemetry that could
//   not be read FAILs;
// - clocks: a sample whose clock event reasons include one the profile does not allow FAILs;
// - throughput (memory, copies both ways, both GEMMs, by wall clock over the interval): below the profile's
//   factor x golden ("measured bad"), more than drift_pct below the median of the GPU's own last 30 steady
//   intervals (those after the warm-up that FAILed nothing, once there are two: a drop that lasts is judged
//   against the steady state before it, all the while), or more than lag_pct below the median of its node's
//   GPUs in the same
//   interval (with 2 GPUs or more on the node).
// Reported, not judged: the power reached as a share of the limit, GPU and HBM temperatures, and the thermal
// slope (degrees C a minute over the last five minutes, a linear fit of the intervals' medians): near 0 once
// the GPU is in thermal steady state, and the steady state's median of each throughput (the last 30 steady
// intervals). A rank the job promised that wrote no row FAILs ("missing").
//
// Note [A burn's memory stays flat]. A burn of days must not grow: the judge keeps of each GPU only the
// intervals the steady state and the slope read (trim()), and the first kKeptFindings findings (each
// counted); the session keeps no digest of a row (SessionOptions::row_digests), the rows going to the results
// stream as each interval ends. tests/unit/test_burn.cpp's soaks hold memory, open files and row sizes flat.

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/burn/profile.hpp"
#include "harness/results/row.hpp"

namespace memstress {

struct BurnFinding {
  int interval = 0;
  int rank = 0;
  std::string gpu;    // as describe() names it
  std::string check;  // "data", "gemm.bf16", "health", "clocks", "golden", "drift", "lag", "missing"
  std::string detail;
};

class BurnJudge {
 public:
  BurnJudge(BurnProfile profile, int ranks);

  // One interval's rows of every rank. Returns what FAILed in it; each failing row's verdict becomes fail
  // with the findings as its reason.
  std::vector<BurnFinding> judge_interval(std::vector<Row>& rows);
  // The burn's end: findings for promised ranks that wrote no row (FAIL: missing).
  std::vector<BurnFinding> finish();

  [[nodiscard]] bool failed() const noexcept { return finding_count_ > 0; }
  // The first kKeptFindings findings (a fault that lasts FAILs every interval of a burn of days); every one
  // is counted.
  [[nodiscard]] const std::vector<BurnFinding>& findings() const noexcept { return findings_; }
  [[nodiscard]] std::size_t finding_count() const noexcept { return finding_count_; }
  // Intervals kept of each GPU (at most: those of the last kSlopeWindowS seconds and the last kSteadyWindow
  // steady ones), for the tests that hold it bounded.
  [[nodiscard]] std::size_t intervals_kept() const noexcept;
  // The verdict per GPU (the --verdict document, memstress.burn-verdict/1).
  [[nodiscard]] nlohmann::json verdict_json(const std::string& overall) const;
  // A line per GPU: its verdict and the figures a burn reports.
  [[nodiscard]] std::vector<std::string> gpu_lines() const;

 private:
  struct Interval {
    int index = 0;
    double at_s = 0;
    std::map<std::string, double> values;  // throughput metrics, temperatures, power share (medians)
    bool failed = false;                   // a finding of this GPU in it: never part of the steady state
  };
  struct Gpu {
    int rank = 0;
    std::string name;
    std::string label;
    std::string uuid;
    std::string node;
    std::string library;
    std::vector<Interval> intervals;                // the last ones only (trim())
    std::size_t interval_count = 0;                 // every interval judged
    std::map<std::string, std::string> first_hash;  // "gemm.bf16" -> "0x…"
    std::map<std::string, double> last_count;       // health counters already judged
    std::vector<BurnFinding> findings;              // the first kKeptFindings
    std::size_t finding_count = 0;
    double power_share_max = 0;
    double power_w_max = 0;
    double gpu_temp_max = 0;
    double hbm_temp_max = 0;
  };

  void judge_row(Gpu& gpu, const Row& row, int interval, std::vector<BurnFinding>& out);
  void vote(std::map<int, Gpu*>& gpus, int interval, std::vector<BurnFinding>& out);
  void lag(const std::vector<Row>& rows, int interval, std::vector<BurnFinding>& out);
  void add(Gpu& gpu, int interval, std::string check, std::string detail, std::vector<BurnFinding>& out);
  static void trim(Gpu& gpu, int warmup_intervals);

  BurnProfile profile_;
  int ranks_;
  std::map<int, Gpu> gpus_;
  bool voted_bf16_ = false;
  bool voted_fp64_ = false;
  std::vector<BurnFinding> findings_;
  std::size_t finding_count_ = 0;
};

inline constexpr std::size_t kKeptFindings = 1000;

// Degrees C a minute: the least-squares slope of (seconds, value) pairs; 0 with fewer than two.
[[nodiscard]] double slope_per_minute(const std::vector<std::pair<double, double>>& points);

}  // namespace memstress
