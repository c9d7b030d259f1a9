// memstress accept --profile FILE|NAME: run an acceptance profile and judge it (harness/accept/profile.hpp),
// or judge results already measured (--from), or write a profile's golden values from a run (--train).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>

#include "apps/commands.hpp"
#include "apps/flag_names.hpp"
#include "apps/shipped_profile.hpp"
#include "harness/accept/input.hpp"
#include "harness/accept/judge.hpp"
#include "harness/accept/junit.hpp"
#include "harness/accept/profile.hpp"
#include "harness/accept/run_checks.hpp"
#include "harness/accept/train.hpp"
#include "harness/accept/verdict.hpp"
#include "harness/alloc/factory.hpp"
#include "harness/core/atomic_file.hpp"
#include "harness/core/error.hpp"
#include "harness/core/exit_code.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/log.hpp"
#include "harness/dist/job.hpp"
#include "harness/dist/world.hpp"
#include "harness/memory/backend.hpp"
#include "harness/memory/device_spec.hpp"
#include "harness/results/read.hpp"
#include "harness/results/sink.hpp"
#include "harness/run/fault.hpp"
#include "harness/run/junit.hpp"
#include "harness/run/plan.hpp"
#include "harness/run/session.hpp"
#include "suites/registry.hpp"

namespace memstress::app {
namespace {

struct AcceptFlags {
  std::string profile;
  std::string device = "auto";
  std::vector<std::string> from;
  bool train = false;
  std::string write;
  std::string out;
  std::string junit;
  bool any_gpu = false;
  bool quiet = false;
  double timeout_s = 300;
  std::string inject_fault;  // tests of a rank lost mid-profile only (run --inject-fault's grammar)
};

std::vector<std::string> split(const std::string& values) {
  std::vector<std::string> out;
  std::stringstream in(values);
  for (std::string v; std::getline(in, v, ',');) {
    out.push_back(v);
  }
  return out;
}

// The runs of results files (memstress.run/1 documents or `.jsonl` streams), each with what its header
// promised, read by compare's loader: every field's type is checked and a bad one named with its file and row
// (exit 2).
AcceptInput runs_from(const std::vector<std::string>& files) {
  AcceptInput input;
  for (const std::string& file : files) {
    Results results = load_results(file, "--from");
    if (results.kind != ResultsKind::memstress) {
      throw InputError(
          fmt::format("--from '{}': {}, not memstress results ({}): accept judges the rows of "
                      "memstress run or accept",
                      file, to_string(results.kind), kSchemaId));
    }
    add_run(input, std::move(results), fmt::format("'{}'", file));
  }
  return input;
}

// This rank's part of a live run: on rank 0, the job's run as a results file would give it back (every
// rank's rows, the job's ranks, how it ended); `aborted` where the session ended early (a lost rank, a
// device that failed outside any case) and its finished rows are judged.
struct LiveRun {
  AcceptInput input;
  bool aborted = false;
};

// Runs the profile on this rank (under mpirun: on every rank, one GPU each, as `run` does) and returns
// the job's run on rank 0 (nothing on the other ranks).
LiveRun run_profile(const AcceptFlags& f, const Profile& profile, std::vector<std::string> argv,
                    InterruptWatch& interrupts, World& world) {
  const Registry registry = suites::builtin_registry();
  std::vector<PlannedCase> cases;
  std::vector<std::string> in_turn;  // workloads run one rank at a time
  for (std::size_t i = 0; i < profile.runs.size(); ++i) {
    const ProfileRun& r = profile.runs[i];
    if (r.min_ranks > world.size()) {
      continue;  // its checks say they were skipped
    }
    PlanRequest request;
    request.names = run_plan_names();
    request.workloads = {r.workload};
    for (const auto& [axis, values] : r.params) {
      request.overrides.push_back(ParamOverride{r.workload, axis, split(values)});
    }
    if (r.in_turn) {
      const Workload* w = registry.find(r.workload);
      if (w != nullptr && w->requirements().all_ranks) {
        throw InputError(
            fmt::format("--profile {}: runs[{}]: in_turn: {} runs on all ranks together (NCCL), not "
                        "one rank at a time",
                        f.profile, i, r.workload));
      }
      request.in_turn = {r.workload};
      if (std::find(in_turn.begin(), in_turn.end(), r.workload) == in_turn.end()) {
        in_turn.push_back(r.workload);
      }
    }
    try {
      for (PlannedCase& c : plan_cases(registry, request)) {
        cases.push_back(std::move(c));
      }
    } catch (const InputError& e) {
      throw InputError(fmt::format("--profile {}: runs[{}] ({}): {}", f.profile, i, r.workload, e.what()));
    }
  }
  std::unique_ptr<DeviceBackend> backend = open_rank_device(f.device, "--device", "", world);
  if (!f.any_gpu && backend->info().name != profile.gpu &&
      DeviceSpec::parse(f.device, "--device").kind == DeviceSpec::Kind::automatic &&
      backend->info().kind == BackendKind::sim) {
    // No GPU here at all (auto fell back to the simulated device): the environment is missing, not the usage.
    throw EnvironmentError(
        fmt::format("--profile {}: its thresholds are for {}, and no CUDA device was found "
                    "here (no NVIDIA driver or no GPU)",
                    f.profile, profile.gpu));
  }
  if (!f.any_gpu && backend->info().name != profile.gpu) {
    throw InputError(
        fmt::format("--profile {}: its thresholds are for {}, and this device is {} (--any-gpu to run "
                    "it anyway)",
                    f.profile, profile.gpu, backend->info().name));
  }
  SessionOptions options;
  options.argv = std::move(argv);
  options.config = {{"device", f.device}, {"profile", profile.name}, {"in_turn", in_turn}};
  if (!f.out.empty()) {
    options.out = f.out;
    options.out_what = "--out";
  }
  options.cases = std::move(cases);
  AllocatorSpec caching;
  caching.flags = allocator_flags();
  options.allocators = {caching};
  options.run.quiet = f.quiet;
  if (!f.inject_fault.empty()) {
    options.run.fault = FaultInjection::parse(f.inject_fault, "--inject-fault");
  }
  options.interrupted = [&f](const RunRecord& /*record*/, int signal, const std::string& /*why*/) {
    note("interrupted by {}: nothing judged{}", signal_name(signal),
         f.out.empty() ? std::string() : fmt::format("; the rows so far are in {}", f.out));
  };
  Session session(std::move(options), std::move(backend), world, interrupts);
  LiveRun live;
  try {
    session.run();
  } catch (const Error& e) {
    // A rank lost (DistError), a device failed outside any case (ApiError): the session has finished its
    // results as aborted with the reason, keeping the rows that finished, and rank 0 judges them (Note [What
    // a run promised]): the lost rank's checks FAIL naming it. Anything else, and the other ranks, end as
    // before.
    if (e.exit_code() != ExitCode::check_failed || !session.writer()) {
      throw;
    }
    live.aborted = true;
  }
  if (session.writer()) {
    const RunRecord& record = session.sink().record();
    std::vector<ResultRow> rows;
    rows.reserve(record.rows.size());
    for (const Row& row : record.rows) {
      rows.push_back(result_row(row));
    }
    // Read back as a results file is (the job's ranks, its status, every rank's host and GPU).
    add_run(live.input, memstress_results(header_json(record), std::move(rows)), "this run");
  }
  return live;
}

// Judges (or trains from) `input`; prints a line per check, a line per failed check of the run itself, and
// the verdict (Note [Nothing judged is not a pass] in harness/accept/verdict.hpp).
int judge(const AcceptFlags& f, Profile& profile, const AcceptInput& input) {
  const std::vector<RunCheckFailure> run_failures = check_runs(input, /*one_model=*/!f.any_gpu, "--any-gpu");
  const auto print_run_failures = [&] {
    for (const RunCheckFailure& failure : run_failures) {
      fmt::print("FAIL  {}: {}\n", failure.name, failure.detail);
    }
  };
  if (f.train) {
    if (!run_failures.empty()) {
      // Golden values come from a healthy run that finished: none are taken from one that did not.
      print_run_failures();
      fmt::print("not trained: the run failed its own checks (above); {} is left as it was\n",
                 f.write.empty() ? f.profile : f.write);
      return to_int(ExitCode::check_failed);
    }
    const std::vector<Untrained> untrained = train(profile, input.rows);
    const std::string target = f.write.empty() ? f.profile : f.write;
    write_file_atomically(target, to_yaml(profile), "--write");
    fmt::print("trained the golden values of {} profile {} into {}\n", profile.name, profile.gpu, target);
    for (const Untrained& u : untrained) {
      fmt::print("  not trained ({}): {}\n", u.why, u.check);
    }
    return 0;
  }
  std::vector<std::pair<const AcceptCheck*, CheckOutcome>> results;
  std::vector<CheckOutcome> outcomes;
  for (const AcceptCheck& check : profile.checks) {
    results.emplace_back(&check, evaluate(check, input));
    const CheckOutcome& o = results.back().second;
    outcomes.push_back(o);
    fmt::print("{}  {}: {}\n", o.skipped ? "SKIP" : o.pass ? "PASS" : "FAIL", check.name, o.detail);
  }
  print_run_failures();
  const int ranks = input.ranks();
  const std::string about =
      fmt::format("profile {}, {}, {} rank{}", profile.name, profile.gpu, ranks, ranks == 1 ? "" : "s");
  if (!f.junit.empty()) {
    write_file_atomically(f.junit, format_accept_junit(profile, results, run_failures), "--junit");
  }
  const AcceptVerdict verdict = verdict_of(outcomes, run_failures.size(), about);
  fmt::print("{}\n", verdict.line);
  return to_int(verdict.code);
}

int accept_command(const AcceptFlags& f, const std::vector<std::string>& argv) {
  if (!f.junit.empty()) {
    check_output_path(f.junit, "--junit");  // before the run, not after it
  }
  // Outputs on one file, or onto an input --from reads, would replace each other (the last written wins).
  std::vector<NamedOutput> outputs{{"--junit", f.junit}, {"--write", f.write}};
  if (!f.out.empty()) {
    outputs.push_back({"--out", f.out});
    outputs.push_back({"--out's stream", ResultSink::stream_path(f.out)});
  }
  check_distinct_outputs(outputs);
  for (const std::string& input : f.from) {
    std::vector<NamedOutput> with_input = outputs;
    with_input.push_back({"--from", input});
    check_distinct_outputs(with_input);
  }
  Profile profile = load_profile(f.profile, "--profile", "--train");
  if (!f.from.empty()) {
    const AcceptInput from = runs_from(f.from);
    if (from.rows.empty() && !f.train) {
      // A run that ended before its first case: nothing was measured, which is not a pass.
      const std::string why =
          fmt::format("--from {}: no rows (a run that ended before its first case?): nothing to judge",
                      fmt::join(f.from, ", "));
      fmt::print(stderr, "memstress: {}\n", why);
      if (!f.junit.empty()) {
        write_file_atomically(
            f.junit,
            format_junit_not_run(fmt::format("memstress.accept.{}", profile.name), "the results judged", why),
            "--junit");
      }
      return to_int(ExitCode::check_failed);
    }
    // Results of one other model are refused; of several models (in any order), FAILed by the run's own
    // check "inputs: one GPU model", naming each model and its file.
    const std::vector<GpuModel> models = gpu_models(from);
    if (!f.any_gpu && models.size() == 1 && models.front().name != profile.gpu) {
      const std::string& gpu = models.front().name;
      throw InputError(fmt::format(
          "--profile {}: its thresholds are for {}, and the results are from {} (--any-gpu "
          "to judge them anyway)",
          f.profile, profile.gpu, gpu.empty() ? std::string("an unknown GPU (they name none)") : gpu));
    }
    return judge(f, profile, from);
  }
  // Under mpirun every rank runs the profile on its GPU; rank 0 judges all ranks' rows.
  InterruptWatch interrupts;  // before MPI, CUDA or any thread exists
  return run_as_job(f.timeout_s, "--timeout", [&](World& world) {
    const auto began = std::chrono::steady_clock::now();
    std::optional<LiveRun> run;
    try {
      run.emplace(run_profile(f, profile, argv, interrupts, world));
    } catch (const EnvironmentError& e) {
      // No GPU where the profile needs one (exit 3): CI gets a failed test naming why, not a missing report.
      if (!f.junit.empty() && world.rank() == 0) {
        write_file_atomically(f.junit,
                              format_junit_not_run(fmt::format("memstress.accept.{}", profile.name),
                                                   "the profile ran", e.what()),
                              "--junit");
      }
      throw;
    }
    const LiveRun& live = *run;
    if (world.rank() != 0) {
      return 0;
    }
    const int code = judge(f, profile, live.input);
    // What the profile cost the node: a pre-job check must stay short, a full one says how long it took.
    note("took {:.0f} s to run the profile on {} rank{}",
         std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(), world.size(),
         world.size() == 1 ? "" : "s");
    if (live.aborted) {
      throw EndJob(static_cast<ExitCode>(code));  // a rank may be dead or hung: no waiting for it at the end
    }
    return code;
  });
}

}  // namespace

Subcommand add_accept(CLI::App& app, std::vector<std::string> argv) {
  auto flags = std::make_shared<AcceptFlags>();
  CLI::App* sub =
      app.add_subcommand("accept", "Run an acceptance profile and print a pass/fail line per check");
  sub->add_option("--profile", flags->profile,
                  "Acceptance profile: a YAML file, or the name of a shipped one (h100, h200)")
      ->required();
  sub->add_option("-d,--device", flags->device, "auto, cuda[:N] or sim[:CAPACITY]");
  sub->add_option("--from", flags->from,
                  "Judge these results (memstress run --out files) instead of running");
  sub->add_flag("--train", flags->train, "Write the measured values into the profile as its golden values");
  CLI::Option* write = sub->add_option("--write", flags->write,
                                       "With --train: write the trained profile here instead of --profile")
                           ->check(a_path());
  sub->add_option("-o,--out", flags->out, "Write the run's results (memstress.run/1) to FILE")
      ->check(a_path());
  sub->add_option("--junit", flags->junit, "Also write the checks as JUnit XML to FILE")->check(a_path());
  sub->add_flag("--any-gpu", flags->any_gpu, "Judge a device other than the profile's GPU model");
  sub->add_flag("-q,--quiet", flags->quiet, "No per-case progress on stderr");
  sub->add_option("--timeout", flags->timeout_s,
                  "Under mpirun: seconds to wait for a late rank before the job is aborted")
      ->capture_default_str();
  // For the tests of a rank lost mid-profile only: RANK:CASE_INDEX:exit|hang|throw, as run takes it (hidden).
  sub->add_option("--inject-fault", flags->inject_fault, "")->group("");
  return {sub, [flags, write, argv = std::move(argv)] {
            if (write->count() > 0 && !flags->train) {
              throw InputError(fmt::format("--write {}: writes the trained profile, so it goes with --train",
                                           flags->write));
            }
            const ProfileChoice choice = choose_profile(flags->profile);
            if (choice.shipped && flags->train && flags->write.empty()) {
              throw InputError(
                  fmt::format("--train: --profile {} is a shipped profile ({}); give --write FILE for "
                              "the trained copy",
                              flags->profile, choice.path));
            }
            flags->profile = choice.path;
            return accept_command(*flags, argv);
          }};
}

}  // namespace memstress::app
