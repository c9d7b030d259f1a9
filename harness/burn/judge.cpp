#include "harness/burn/judge.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "harness/burn/interval_row.hpp"
#include "harness/stats/summary.hpp"

namespace memstress {
namespace {

constexpr std::array kThroughput = {"memory.GB/s", "h2d.GB/s", "d2h.GB/s", "gemm.bf16.TFLOP/s",
                                    "gemm.fp64.TFLOP/s"};
constexpr double kSlopeWindowS = 300;
constexpr std::size_t kSteadyWindow = 30;
constexpr std::size_t kSteadyMin = 2;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return quantile_sorted(v, 0.5);
}

std::string number(double v) {
  return fmt::format("{:.4g}", v);
}

// The text after `prefix` of the first note that starts with it, or "".
std::string note_after(const Row& row, std::string_view prefix) {
  for (const std::string& note : row.notes) {
    if (note.starts_with(prefix)) {
      return note.substr(prefix.size());
    }
  }
  return {};
}

std::vector<std::string> split_hashes(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

double slope_per_minute(const std::vector<std::pair<double, double>>& points) {
  if (points.size() < 2) {
    return 0;
  }
  double mx = 0;
  double my = 0;
  for (const auto& [x, y] : points) {
    mx += x;
    my += y;
  }
  mx /= static_cast<double>(points.size());
  my /= static_cast<double>(points.size());
  double sxy = 0;
  double sxx = 0;
  for (const auto& [x, y] : points) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) * (x - mx);
  }
  return sxx == 0 ? 0 : sxy / sxx * 60;
}

BurnJudge::BurnJudge(BurnProfile profile, int ranks) : profile_(std::move(profile)), ranks_(ranks) {}

void BurnJudge::add(Gpu& gpu, int interval, std::string check, std::string detail,
                    std::vector<BurnFinding>& out) {
  BurnFinding f{interval, gpu.rank, "", std::move(check), std::move(detail)};
  f.gpu = fmt::format("rank {}, {}{}{}", gpu.rank, gpu.label,
                      gpu.uuid.empty() ? "" : fmt::format(" ({})", gpu.uuid),
                      gpu.node.empty() ? "" : fmt::format(" on host {}", gpu.node));
  if (gpu.findings.size() < kKeptFindings) {
    gpu.findings.push_back(f);
  }
  ++gpu.finding_count;
  if (findings_.size() < kKeptFindings) {
    findings_.push_back(f);
  }
  ++finding_count_;
  out.push_back(std::move(f));
}

void BurnJudge::judge_row(Gpu& gpu, const Row& row, int interval, std::vector<BurnFinding>& out) {
  if (row.verdict == Verdict::error) {
    add(gpu, interval, "error", fmt::format("the stress stopped with an error: {}", row.reason), out);
    gpu.intervals.push_back(Interval{interval, 0, {}, true});  // its own interval, FAILed
    ++gpu.interval_count;
    return;
  }
  if (row.errors > 0) {
    const std::string where = note_after(row, "verification.errors: ");
    add(gpu, interval, "data",
        fmt::format("{} wrong word(s) of {} checked{}", row.errors, row.checked,
                    where.empty() ? "" : fmt::format("; {}", where)),
        out);
  }
  // The GEMM canary against this GPU's own first result.
  for (const auto& [prefix, key] :
       {std::pair{kBf16HashNote, "gemm.bf16"}, std::pair{kFp64HashNote, "gemm.fp64"}}) {
    for (const std::string& h : split_hashes(note_after(row, prefix))) {
      const auto first = gpu.first_hash.try_emplace(key, h).first->second;
      if (h != first) {
        add(gpu, interval, key,
            fmt::format("result hash {} differs from this GPU's first {} (same inputs)", h, first), out);
        break;
      }
    }
  }
  // Health: counters judged when they grow; states when first seen.
  for (const char* name :
       {"ecc.uncorrected.new", "remapped_rows.uncorrectable.new", "retired_pages.double_bit.new",
        "remapped_rows.pending", "remapped_rows.failed", "nvlink.errors", "xid.events", "processes.others"}) {
    const MetricResult* m = row.metric(name);
    if (m == nullptr || m->samples.empty()) {
      continue;
    }
    const double v = m->samples.front();
    double& before = gpu.last_count[name];
    if (v > before) {
      std::string why = std::string_view(name) == "processes.others"
                            ? fmt::format("{} other process(es) hold a context on this GPU", number(v))
                            : fmt::format("{} {} during the burn", name, number(v));
      if (std::string_view(name) == "xid.events") {
        const std::string xid = note_after(row, "xid.events: ");
        why = xid.empty() ? why : xid;
      }
      add(gpu, interval, "health", why, out);
    }
    before = std::max(before, v);
  }
  if (const std::string lost = note_after(row, "health: "); !lost.empty()) {
    add(gpu, interval, "health", fmt::format("health could not be read: {}", lost), out);
  }
  if (const std::string lost = note_after(row, "telemetry: "); !lost.empty()) {
    add(gpu, interval, "health", fmt::format("telemetry could not be read: {}", lost), out);
  }
  if (const MetricResult* m = row.metric("clocks.slowed.samples"); m != nullptr && m->summary.max > 0) {
    add(gpu, interval, "clocks",
        fmt::format("clocks held down by {} (allowed: {})", note_after(row, "clocks.slowed.samples: "),
                    fmt::join(profile_.allowed_clock_reason_names, ", ")),
        out);
  }
  // Throughput: golden, then drift from this GPU's steady state.
  Interval now{interval, 0, {}};
  if (const MetricResult* at = row.metric("at.s")) {
    now.at_s = at->summary.median;
  }
  for (const char* name : kThroughput) {
    const MetricResult* m = row.metric(name);
    if (m == nullptr || std::isnan(m->summary.median)) {
      add(gpu, interval, "missing", fmt::format("no {} in the interval's row", name), out);
      continue;
    }
    const double v = m->summary.median;
    now.values[name] = v;
    for (const BurnGolden& g : profile_.golden) {
      if (g.metric == name && v < g.factor * g.golden) {
        add(gpu, interval, "golden",
            fmt::format("measured bad: {} {} {}, needs >= {} ({} x golden {})", name, number(v), m->unit,
                        number(g.factor * g.golden), g.factor, number(g.golden)),
            out);
      }
    }
    // The steady state: the median of the last kSteadyWindow steady intervals (bounded work a row, however
    // long the burn), judged once there are kSteadyMin of them (one interval alone is no steady state).
    std::vector<double> steady;
    for (auto it = gpu.intervals.rbegin(); it != gpu.intervals.rend() && steady.size() < kSteadyWindow;
         ++it) {
      if (it->index >= profile_.warmup_intervals && !it->failed && it->values.contains(name)) {
        steady.push_back(it->values.at(name));
      }
    }
    if (steady.size() >= kSteadyMin) {
      const double base = median(steady);
      if (base > 0 && v < base * (1 - profile_.drift_pct / 100)) {
        add(gpu, interval, "drift",
            fmt::format("{} {} {} is {:.0f}% below this GPU's steady state {} (bound {:g}%)", name, number(v),
                        m->unit, 100 * (1 - v / base), number(base), profile_.drift_pct),
            out);
      }
    }
  }
  for (const auto& [name, keep] :
       {std::pair{"power.share", "power.share"}, std::pair{"temp.gpu.C", "temp.gpu.C"},
        std::pair{"temp.hbm.C", "temp.hbm.C"}, std::pair{"power.W", "power.W"}}) {
    if (const MetricResult* m = row.metric(name)) {
      now.values[keep] = m->summary.median;
      double& peak = std::string_view(name) == "power.share"  ? gpu.power_share_max
                     : std::string_view(name) == "temp.gpu.C" ? gpu.gpu_temp_max
                     : std::string_view(name) == "temp.hbm.C" ? gpu.hbm_temp_max
                                                              : gpu.power_w_max;
      peak = std::max(peak, std::string_view(name) == "power.share" ? m->summary.median : m->summary.max);
    }
  }
  gpu.intervals.push_back(std::move(now));
  ++gpu.interval_count;
}

void BurnJudge::trim(Gpu& gpu, int warmup_intervals) {
  if (gpu.intervals.empty()) {
    return;
  }
  // Keep the intervals of the slope's window and the last kSteadyWindow steady ones (these may be long ago,
  // where a fault has lasted), in order; drop the rest.
  const double end = gpu.intervals.back().at_s;
  std::vector<bool> keep(gpu.intervals.size(), false);
  std::size_t steady = 0;
  for (std::size_t i = gpu.intervals.size(); i-- > 0;) {
    const Interval& it = gpu.intervals[i];
    const bool is_steady = it.index >= warmup_intervals && !it.failed;
    keep[i] = it.at_s >= end - kSlopeWindowS || (is_steady && steady < kSteadyWindow);
    steady += is_steady ? 1 : 0;
  }
  std::size_t at = 0;
  for (std::size_t i = 0; i < gpu.intervals.size(); ++i) {
    if (keep[i]) {
      if (at != i) {
        gpu.intervals[at] = std::move(gpu.intervals[i]);
      }
      ++at;
    }
  }
  gpu.intervals.resize(at);
}

std::size_t BurnJudge::intervals_kept() const noexcept {
  std::size_t most = 0;
  for (const auto& [rank, gpu] : gpus_) {
    most = std::max(most, gpu.intervals.size());
  }
  return most;
}

void BurnJudge::vote(std::map<int, Gpu*>& gpus, int interval, std::vector<BurnFinding>& out) {
  for (const auto& [key, voted] :
       {std::pair{"gemm.bf16", &voted_bf16_}, std::pair{"gemm.fp64", &voted_fp64_}}) {
    if (*voted || gpus.size() < 2) {
      continue;
    }
    // Groups of one model and GEMM library; each votes by its first hash.
    std::map<std::pair<std::string, std::string>, std::map<std::string, std::vector<Gpu*>>> groups;
    bool all = true;
    for (auto& [rank, gpu] : gpus) {
      const auto h = gpu->first_hash.find(key);
      all = all && h != gpu->first_hash.end();
      if (h != gpu->first_hash.end()) {
        groups[{gpu->name, gpu->library}][h->second].push_back(gpu);
      }
    }
    if (!all) {
      continue;
    }
    *voted = true;
    for (const auto& [group, by_hash] : groups) {
      std::size_t total = 0;
      std::size_t most = 0;
      std::string winner;
      for (const auto& [hash, members] : by_hash) {
        total += members.size();
        if (members.size() > most) {
          most = members.size();
          winner = hash;
        }
      }
      const bool majority = 2 * most > total;
      for (const auto& [hash, members] : by_hash) {
        if (majority && hash == winner) {
          continue;
        }
        for (Gpu* gpu : members) {
          add(*gpu, interval, key,
              majority ? fmt::format("result hash {} disagrees with {} of {} GPUs of this model ({})", hash,
                                     most, total, winner)
                       : fmt::format("result hash {}: the {} GPUs of this model disagree, with no majority",
                                     hash, total),
              out);
        }
      }
    }
  }
}

void BurnJudge::lag(const std::vector<Row>& rows, int interval, std::vector<BurnFinding>& out) {
  std::map<std::string, std::vector<const Row*>> nodes;
  for (const Row& row : rows) {
    nodes[row.device.node].push_back(&row);
  }
  for (const auto& [node, members] : nodes) {
    if (members.size() < 2) {
      continue;
    }
    for (const char* name : kThroughput) {
      std::vector<double> values;
      for (const Row* r : members) {
        if (const MetricResult* m = r->metric(name); m != nullptr && !std::isnan(m->summary.median)) {
          values.push_back(m->summary.median);
        }
      }
      if (values.size() < 2) {
        continue;
      }
      const double mid = median(values);
      for (const Row* r : members) {
        const MetricResult* m = r->metric(name);
        if (m != nullptr && mid > 0 && m->summary.median < mid * (1 - profile_.lag_pct / 100)) {
          add(gpus_.at(r->rank), interval, "lag",
              fmt::format("{} {} {} is {:.0f}% below the node's median {} of {} GPUs (bound {:g}%)", name,
                          number(m->summary.median), m->unit, 100 * (1 - m->summary.median / mid),
                          number(mid), values.size(), profile_.lag_pct),
              out);
        }
      }
    }
  }
}

std::vector<BurnFinding> BurnJudge::judge_interval(std::vector<Row>& rows) {
  std::vector<BurnFinding> out;
  std::map<int, Gpu*> present;
  int interval = 0;
  for (Row& row : rows) {
    const auto it = std::find_if(row.params.begin(), row.params.end(),
                                 [](const auto& p) { return p.first == "interval"; });
    interval = it == row.params.end() ? interval : std::stoi(it->second);
    Gpu& gpu = gpus_[row.rank];
    if (gpu.label.empty()) {
      gpu.rank = row.rank;
      gpu.name = row.device.name;
      gpu.label = row.device.label;
      gpu.uuid = row.device.uuid;
      gpu.node = row.device.node;
      gpu.library = note_after(row, kGemmLibraryNote);
    }
    present[row.rank] = &gpu;
    judge_row(gpu, row, interval, out);
  }
  vote(present, interval, out);
  if (interval >= profile_.warmup_intervals) {  // held to the node once the warm-up has settled clocks
    lag(rows, interval, out);
  }
  for (const BurnFinding& f : out) {
    if (const auto it = gpus_.find(f.rank); it != gpus_.end() && !it->second.intervals.empty()) {
      it->second.intervals.back().failed = true;
    }
  }
  for (auto& [rank, gpu] : present) {
    trim(*gpu, profile_.warmup_intervals);
  }
  for (Row& row : rows) {
    std::vector<std::string> why;
    for (const BurnFinding& f : out) {
      if (f.rank == row.rank) {
        why.push_back(fmt::format("{}: {}", f.check, f.detail));
      }
    }
    if (!why.empty()) {
      row.verdict = Verdict::fail;
      row.reason = fmt::format("{}", fmt::join(why, "; "));
    }
  }
  return out;
}

std::vector<BurnFinding> BurnJudge::finish() {
  std::vector<BurnFinding> out;
  for (int rank = 0; rank < ranks_; ++rank) {
    if (!gpus_.contains(rank)) {
      Gpu& gpu = gpus_[rank];
      gpu.rank = rank;
      gpu.label = "(no row)";
      add(gpu, -1, "missing", "this rank wrote no row: its GPU was not burned", out);
    }
  }
  return out;
}

nlohmann::json BurnJudge::verdict_json(const std::string& overall) const {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& [rank, gpu] : gpus_) {
    nlohmann::json failures = nlohmann::json::array();
    for (const BurnFinding& f : gpu.findings) {
      failures.push_back({{"interval", f.interval}, {"check", f.check}, {"detail", f.detail}});
    }
    std::vector<std::pair<double, double>> gpu_t;
    std::vector<std::pair<double, double>> hbm_t;
    const double end = gpu.intervals.empty() ? 0 : gpu.intervals.back().at_s;
    nlohmann::json steady = nlohmann::json::object();
    for (const char* name : kThroughput) {
      std::vector<double> v;  // the last kSteadyWindow steady intervals: the steady state the judge holds to
      for (auto i = gpu.intervals.rbegin(); i != gpu.intervals.rend() && v.size() < kSteadyWindow; ++i) {
        if (i->index >= profile_.warmup_intervals && !i->failed && i->values.contains(name)) {
          v.push_back(i->values.at(name));
        }
      }
      steady[name] = v.empty() ? nlohmann::json() : nlohmann::json(median(v));
    }
    for (const Interval& i : gpu.intervals) {
      if (i.at_s >= end - kSlopeWindowS) {
        if (i.values.contains("temp.gpu.C")) {
          gpu_t.emplace_back(i.at_s, i.values.at("temp.gpu.C"));
        }
        if (i.values.contains("temp.hbm.C")) {
          hbm_t.emplace_back(i.at_s, i.values.at("temp.hbm.C"));
        }
      }
    }
    const auto or_null = [](double v, bool known) { return known ? nlohmann::json(v) : nlohmann::json(); };
    gpus.push_back({{"rank", rank},
                    {"device", gpu.label},
                    {"name", gpu.name},
                    {"uuid", gpu.uuid},
                    {"host", gpu.node},
                    {"verdict", gpu.findings.empty() ? overall : std::string("FAIL")},
                    {"intervals", gpu.interval_count},
                    {"failures_counted", gpu.finding_count},
                    {"failures", failures},
                    {"steady_state_median", steady},
                    {"power_share_max", or_null(gpu.power_share_max, gpu.power_share_max > 0)},
                    {"power_w_max", or_null(gpu.power_w_max, gpu.power_w_max > 0)},
                    {"gpu_temp_max_c", or_null(gpu.gpu_temp_max, gpu.gpu_temp_max > 0)},
                    {"hbm_temp_max_c", or_null(gpu.hbm_temp_max, gpu.hbm_temp_max > 0)},
                    {"gpu_temp_slope_c_per_min", or_null(slope_per_minute(gpu_t), gpu_t.size() >= 2)},
                    {"hbm_temp_slope_c_per_min", or_null(slope_per_minute(hbm_t), hbm_t.size() >= 2)}});
  }
  return {{"schema", "memstress.burn-verdict/1"},
          {"profile", profile_.name},
          {"verdict", failed() ? std::string("FAIL") : overall},
          {"ranks", ranks_},
          {"gpus", gpus}};
}

std::vector<std::string> BurnJudge::gpu_lines() const {
  std::vector<std::string> out;
  const nlohmann::json doc = verdict_json("PASS");
  for (const nlohmann::json& g : doc["gpus"]) {
    const auto shown = [&](const char* key, const char* unit, double scale = 1) {
      return g[key].is_null() ? std::string("n/a")
                              : fmt::format("{:.3g}{}", g[key].get<double>() * scale, unit);
    };
    out.push_back(fmt::format(
        "{}  rank {}, {}{}: {} interval(s), {} failure(s); memory {} GB/s, bf16 {} TFLOP/s, fp64 {} TFLOP/s "
        "(steady medians); power up to {} of the limit ({}), GPU {} HBM {} at most, slope GPU {} HBM {} /min",
        g["failures"].empty() ? "ok  " : "FAIL", g["rank"].get<int>(), g["device"].get<std::string>(),
        g["uuid"].get<std::string>().empty() ? std::string() : " " + g["uuid"].get<std::string>(),
        g["intervals"].get<std::size_t>(), g["failures"].size(),
        g["steady_state_median"]["memory.GB/s"].is_null()
            ? std::string("n/a")
            : number(g["steady_state_median"]["memory.GB/s"].get<double>()),
        g["steady_state_median"]["gemm.bf16.TFLOP/s"].is_null()
            ? std::string("n/a")
            : number(g["steady_state_median"]["gemm.bf16.TFLOP/s"].get<double>()),
        g["steady_state_median"]["gemm.fp64.TFLOP/s"].is_null()
            ? std::string("n/a")
            : number(g["steady_state_median"]["gemm.fp64.TFLOP/s"].get<double>()),
        shown("power_share_max", "%", 100), shown("power_w_max", " W"), shown("gpu_temp_max_c", " C"),
        shown("hbm_temp_max_c", " C"), shown("gpu_temp_slope_c_per_min", " C"),
        shown("hbm_temp_slope_c_per_min", " C")));
  }
  return out;
}

}  // namespace memstress
