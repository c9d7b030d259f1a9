// memstress burn: hours of verified stress on every GPU of every rank, a row a minute, judged as it goes
// (harness/burn/loop.hpp, Note [Judging a burn] in harness/burn/judge.hpp).

#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <optional>

#include "apps/commands.hpp"
#include "apps/shipped_profile.hpp"
#include "harness/burn/duration.hpp"
#include "harness/burn/judge.hpp"
#include "harness/burn/loop.hpp"
#include "harness/burn/profile.hpp"
#include "harness/burn/sim_engine.hpp"
#include "harness/burn/train.hpp"
#include "harness/core/atomic_file.hpp"
#include "harness/core/error.hpp"
#include "harness/core/exit_code.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/log.hpp"
#include "harness/core/planted_faults.hpp"
#include "harness/dist/job.hpp"
#include "harness/dist/world.hpp"
#include "harness/memory/backend.hpp"
#include "harness/results/read.hpp"
#include "harness/results/sink.hpp"
#include "harness/run/session.hpp"
#include "suites/burn_engine.hpp"

namespace memstress::app {
namespace {

struct BurnFlags {
  std::string profile;
  std::string device = "auto";
  std::string duration;
  std::string interval;
  std::string out;
  std::string verdict;
  bool any_gpu = false;
  bool quiet = false;
  double timeout_s = 300;
  bool train = false;
  std::vector<std::string> from;  // --train: healthy burns' results
  std::string write;              // --train: where the trained profile goes
};

// The simulated device's stress covers this much host memory, whatever its capacity.
constexpr std::uint64_t kSimBytes = 8ULL << 20U;
constexpr std::uint64_t kSeed = 0x6d656d7374726573ULL;

// The simulated device's throughput is the host's, shared with whatever else runs there (tests side by side):
// a burn of it without a profile holds throughput to bounds that only a planted drop passes.
constexpr double kSimDefaultBoundPct = 80;

BurnProfile chosen_profile(const BurnFlags& f) {
  BurnProfile p = f.profile.empty() ? default_burn_profile()
                                    : load_burn_profile(choose_profile(f.profile).path, "--profile");
  if (f.profile.empty() && f.device.starts_with("sim")) {
    p.drift_pct = kSimDefaultBoundPct;
    p.lag_pct = kSimDefaultBoundPct;
  }
  if (!f.duration.empty()) {
    p.duration_s = parse_duration(f.duration, "--duration", kMinBurnSeconds, kMaxBurnSeconds);
  }
  if (!f.interval.empty()) {
    p.interval_s = parse_duration(f.interval, "--interval", kMinIntervalSeconds, kMaxIntervalSeconds);
  }
  if (plan_intervals(p.duration_s, p.interval_s).count > kMaxIntervals) {
    throw InputError(
        fmt::format("--duration {:g} s in intervals of {:g} s: more than {} intervals (rows); give a "
                    "longer --interval",
                    p.duration_s, p.interval_s, kMaxIntervals));
  }
  return p;
}

void print_findings(const std::vector<BurnFinding>& found) {
  for (const BurnFinding& f : found) {
    fmt::print("FAIL  {}: {} in interval {}: {}\n", f.gpu, f.check, f.interval, f.detail);
  }
  std::fflush(stdout);
}

int burn_on_rank(const BurnFlags& f, const BurnProfile& profile, const std::vector<std::string>& argv,
                 InterruptWatch& interrupts, World& world) {
  std::unique_ptr<DeviceBackend> backend = open_rank_device(f.device, "--device", "", world);
  const bool sim = backend->info().kind == BackendKind::sim;
  if (!sim && !f.any_gpu && !profile.gpu.empty() && backend->info().name != profile.gpu) {
    throw InputError(
        fmt::format("--profile {}: its bounds are for {}, and this device is {} (--any-gpu to burn "
                    "it anyway)",
                    f.profile, profile.gpu, backend->info().name));
  }
  const IntervalPlan plan = plan_intervals(profile.duration_s, profile.interval_s);
  SessionOptions options;
  options.argv = argv;
  options.config = {{"device", f.device},
                    {"profile", profile.name},
                    {"duration_s", profile.duration_s},
                    {"interval_s", plan.seconds},
                    {"intervals", plan.count}};
  if (!f.out.empty()) {
    options.out = f.out;
    options.out_what = "--out";
  }
  options.run.quiet = f.quiet;
  options.row_digests = false;  // memory flat however many intervals (ResultSink)
  options.interrupted = [&f](const RunRecord& /*record*/, int /*signal*/, const std::string& why) {
    note("{}: not judged as a whole{}", why,
         f.out.empty() ? std::string() : fmt::format("; the rows are in {}", f.out));
  };
  Session session(std::move(options), std::move(backend), world, interrupts);
  BurnJudge judge(profile, world.size());
  BurnSetup setup;
  setup.profile = profile;
  setup.faults = (sim ? simulated_device_faults() : planted_faults()).timed;
  setup.make_engine = [&](SessionParts& parts) -> std::unique_ptr<BurnEngine> {
    if (sim) {
      return make_sim_burn_engine(kSimBytes, kSeed, setup.faults);
    }
    return suites::make_cuda_burn_engine(parts.allocator, *parts.host, profile.memory_share, kSeed,
                                         setup.faults);
  };
  setup.make_telemetry = [&](SessionParts& parts) -> std::unique_ptr<Telemetry> {
    return sim ? nullptr : nvml_telemetry("", parts.backend.info().uuid);
  };
  setup.on_start = [&](const std::string& what) {
    note("burn: {} interval(s) of {:g} s on {} rank(s), profile {}: {}", plan.count, plan.seconds,
         world.size(), profile.name, what);
  };
  setup.on_interval = [&](int k, int n, const std::vector<BurnFinding>& found) {
    print_findings(found);
    if (!f.quiet && k < n) {
      note("interval {} ({} of {}): {}", k, k + 1, n,
           found.empty() ? std::string("ok") : fmt::format("{} FAIL", found.size()));
    }
  };
  std::string stopped;
  try {
    session.run_loop([&](SessionParts& parts) { run_burn(setup, parts, judge); });
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    if (world.size() > 1 && world.rank() != 0) {
      throw;
    }
    stopped = e.what();
  }
  if (world.rank() != 0) {
    return 0;
  }
  if (!stopped.empty()) {
    fmt::print("FAIL  burn: stopped before its end: {}\n", stopped);
  }
  for (const std::string& line : judge.gpu_lines()) {
    fmt::print("{}\n", line);
  }
  const bool failed = judge.failed() || !stopped.empty();
  const std::string overall = failed ? "FAIL" : sim ? "NOT JUDGED" : "PASS";
  if (!f.verdict.empty()) {
    nlohmann::json doc = judge.verdict_json(overall);
    doc["verdict"] = overall;
    doc["stopped"] = stopped.empty() ? nlohmann::json() : nlohmann::json(stopped);
    write_file_atomically(f.verdict, doc.dump(2) + "\n", "--verdict");
  }
  fmt::print("verdict: {} ({} finding(s) over {} interval(s) of {:g} s, {} rank(s); profile {}{})\n", overall,
             judge.finding_count(), plan.count, plan.seconds, world.size(), profile.name,
             sim ? "; the simulated device: its figures are the host's, never a GPU's" : "");
  return to_int(failed ? ExitCode::check_failed : sim ? ExitCode::env_missing : ExitCode::ok);
}

// --train: the profile's golden values and bounds from healthy burns (Note [Training a burn's bounds]).
int train_profile(const BurnFlags& f) {
  if (f.profile.empty() || f.from.empty() || f.write.empty()) {
    throw InputError("--train: needs --profile (the base), --from FILE... (healthy burns) and --write FILE");
  }
  check_output_path(f.write, "--write");
  const BurnProfile base = load_burn_profile(choose_profile(f.profile).path, "--profile");
  std::vector<Results> burns;
  for (const std::string& path : f.from) {
    burns.push_back(load_results(path, "--from"));
  }
  const BurnTraining t = train_burn(base, burns, "--from");
  std::vector<std::string> comment{
      fmt::format("{}: trained by `memstress burn --train` from {} healthy burn(s) (docs/burn.md)", base.name,
                  burns.size())};
  for (const std::string& line : t.lines) {
    fmt::print("{}\n", line);
    comment.push_back(line);
  }
  write_file_atomically(f.write, burn_profile_yaml(t.profile, comment), "--write");
  fmt::print("wrote {}\n", f.write);
  return to_int(ExitCode::ok);
}

}  // namespace

Subcommand add_burn(CLI::App& app, std::vector<std::string> argv) {
  auto flags = std::make_shared<BurnFlags>();
  CLI::App* sub = app.add_subcommand(
      "burn",
      "Burn in every GPU: verified memory stress, copies and GEMMs for a duration, a judged row a minute");
  sub->add_option("--profile", flags->profile,
                  "Burn profile: a YAML file, or the name of a shipped one (h100-burn, h200-burn)");
  sub->add_option("-t,--duration", flags->duration,
                  "How long: 90s, 15m, 2h, 7d (default: the profile's, 15m)");
  sub->add_option("--interval", flags->interval,
                  "Seconds between rows, at most 60 (default: the profile's, 60)");
  sub->add_option("-d,--device", flags->device, "auto, cuda[:N] or sim[:CAPACITY]");
  sub->add_option("-o,--out", flags->out,
                  "Write the interval rows (memstress.run/1) to FILE, a row as each ends")
      ->check(a_path());
  sub->add_option("--verdict", flags->verdict, "Write the verdict per GPU as JSON to FILE")->check(a_path());
  sub->add_flag("--any-gpu", flags->any_gpu, "Burn a device other than the profile's GPU model");
  sub->add_flag("-q,--quiet", flags->quiet, "No per-interval progress on stderr");
  sub->add_option("--timeout", flags->timeout_s,
                  "Under mpirun: seconds to wait for a late rank before the job is aborted")
      ->capture_default_str();
  sub->add_flag("--train", flags->train,
                "Write --profile with golden values and bounds trained from healthy burns (--from, --write)");
  sub->add_option("--from", flags->from, "With --train: results of healthy burns (--out files)")
      ->check(a_path());
  sub->add_option("--write", flags->write, "With --train: write the trained profile to FILE")
      ->check(a_path());
  return {sub, [flags, argv = std::move(argv)] {
            if (!flags->train && (!flags->from.empty() || !flags->write.empty())) {
              throw InputError("--from and --write go with --train");
            }
            if (flags->train) {
              return train_profile(*flags);
            }
            if (!flags->verdict.empty()) {
              check_output_path(flags->verdict, "--verdict");
            }
            std::vector<NamedOutput> outputs{{"--verdict", flags->verdict}};
            if (!flags->out.empty()) {
              outputs.push_back({"--out", flags->out});
              outputs.push_back({"--out's stream", ResultSink::stream_path(flags->out)});
            }
            check_distinct_outputs(outputs);
            if (flags->timeout_s <= 0 || !std::isfinite(flags->timeout_s)) {
              throw InputError(
                  fmt::format("--timeout {}: must be a number of seconds above 0", flags->timeout_s));
            }
            const BurnProfile profile = chosen_profile(*flags);
            InterruptWatch interrupts;  // before MPI, CUDA or any thread exists
            // A rank's wait for the others covers an interval and its gather.
            const double timeout = std::max(flags->timeout_s, profile.interval_s * 2 + 60);
            return run_as_job(timeout, "--timeout", [&](World& world) {
              return burn_on_rank(*flags, profile, argv, interrupts, world);
            });
          }};
}

}  // namespace memstress::app
