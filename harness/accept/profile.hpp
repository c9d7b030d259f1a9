#pragma once

// Acceptance profiles (`memstress accept`): what to run on a GPU of one model and which thresholds its
// results must meet, in YAML:
//
//   name: h100
//   gpu: NVIDIA H100 80GB HBM3          # the device model the thresholds are for
//   runs:                               # workloads and parameters, as `memstress run -p` takes them
//     - workload: transfers
//       params: {direction: "h2d,d2h", host: pinned, bytes: 256M}
//   checks:
//     - name: pinned H2D bandwidth
//       workload: transfers
//       where: {direction: h2d}          # rows whose parameters match (all rows of the workload if absent)
//       metric: GB/s                     # a metric of those rows, or verification.errors / verdict
//       golden: 52.6                     # a measured golden value (`--train` writes it) ...
//       factor: 0.75                     # ... and the share of it that passes (DCGM's 0.75 x golden)
//     - {name: memory integrity, workload: integrity, metric: verification.errors, max: 0}
//     - {name: H2D floor, workload: transfers, metric: GB/s, min: 54.1, source: "fleet: ..."}
//
// How a check is judged: judge.hpp; how its golden value is trained: train.hpp.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/run/params.hpp"

namespace memstress {

struct ProfileRun {
  std::string workload;
  std::vector<std::pair<std::string, std::string>> params;  // axis -> values ("v1,v2")
  int min_ranks = 1;     // left out of a run with fewer ranks (collectives need several)
  bool in_turn = false;  // with several ranks, one rank of each node at a time (PlannedCase::in_turn)
};

struct AcceptCheck {
  std::string name;
  std::string workload;
  std::vector<std::pair<std::string, std::string>> where;
  std::string metric;
  std::optional<double> golden;
  double factor = 0.75;
  std::optional<double> min;
  std::optional<double> max;
  // A bound relative to the GPUs themselves (a percentage): no row may be worse than the median of the
  // rows matched by more than this, so a pre-job check names the straggler of a node whatever its model.
  // In a job of several nodes of at least 3 rows each, each node's rows are held to that node's own median.
  std::optional<double> spread = {};
  int min_ranks = 1;  // with fewer ranks the check is skipped (it says so), not failed
  // A figure of the node, not of each GPU (the p2p matrix, measured by each host's first rank): the other
  // ranks' skipped rows of a host whose first rank measured it do not count as GPUs left unjudged.
  bool per_host = false;
  // Where its min or max came from, where a tool set it ("fleet: median 55.35 GB/s - 3 x 0.412 (scaled MAD)
  // over 12 GPUs, driver 580.159.04": `memstress db train`); a failed or passed line quotes it.
  std::string source = {};
  // How its bounds are trained, as the command names it (parse_profile's `train`: its flag), named where the
  // check has none or a golden value that cannot be one.
  std::string train = {};
};

struct Profile {
  std::string name;
  std::string gpu;
  std::string description;
  std::vector<ProfileRun> runs;
  std::vector<AcceptCheck> checks;
};

// The largest profile read (docs/limits.md): the shipped ones are under 20 KiB.
inline constexpr std::uint64_t kMaxProfileBytes = std::uint64_t{1} << 20U;

// Throws InputError naming the file (and what is wrong) for anything that is not a valid profile;
// load_profile names it with `what` (the command's flag that gave it) where it cannot be read. `train`: how
// the command trains a profile (its flag), each check's AcceptCheck::train.
[[nodiscard]] Profile load_profile(const std::filesystem::path& path, std::string_view what,
                                   std::string_view train);
[[nodiscard]] Profile parse_profile(const std::string& yaml, const std::string& name, std::string_view train);
[[nodiscard]] std::string to_yaml(const Profile& profile);

}  // namespace memstress
