// memstress doctor SNAPSHOT: the answers from a PyTorch memory snapshot (or an RMM log, or a memstress
// trace), in one command (harness/doctor): what the program needed, who held the memory at the peak, its
// OOM and the setting that avoids it, every setting at each capacity, and growth. --format json prints
// the memstress.doctor/1 document; html draws it (the installed report, python3 -m memstress.report).
// Exit 0 when the diagnosis ran (what it finds is reported, not an error), 2 for input that is no
// snapshot, 3 when the converter or the report cannot run.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <memory>
#include <utility>

#include "apps/commands.hpp"
#include "apps/flag_names.hpp"
#include "harness/alloc/alloc_config.hpp"
#include "harness/alloc/factory.hpp"
#include "harness/core/atomic_file.hpp"
#include "harness/core/data_dir.hpp"
#include "harness/core/error.hpp"
#include "harness/core/json_text.hpp"
#include "harness/core/subprocess.hpp"
#include "harness/core/text_table.hpp"
#include "harness/doctor/doctor.hpp"
#include "harness/doctor/format.hpp"

namespace memstress::app {
namespace {

struct DoctorFlags {
  std::string snapshot;
  std::string capacity;
  std::string alloc_conf;
  std::string trace_device;
  std::string format = "table";
  std::string out;
  std::size_t top = 10;
  std::vector<std::string> peers;       // --allocator
  bool alloc_conf_given = false;        // --alloc-conf '' is PyTorch's defaults, not the flag left out
  std::vector<std::string> batch_runs;  // --batch-runs A,B
  std::string batch;                    // --batch a,b
  std::uint64_t multiprocessors = 0;    // --multiprocessors, for --batch-runs
};

int doctor_command(const DoctorFlags& f) {
  if (!f.out.empty()) {
    check_output_path(f.out, "--out");  // before the replays, not after them
  }
  doctor::DoctorOptions options;
  if (!f.capacity.empty()) {
    options.capacities = doctor::parse_capacities(f.capacity, "--capacity");
  }
  if (f.alloc_conf_given) {
    options.alloc_conf = AllocConfig::parse(f.alloc_conf, "--alloc-conf");
  }
  options.flags = doctor_flags();
  options.trace_device = f.trace_device;
  for (const std::string& peer : f.peers) {
    AllocatorSpec spec;
    spec.flags = allocator_flags();
    spec.name = peer;
    validate(spec);  // before the replays: an unknown name or a missing plugin is exit 2 at once
    options.peers.push_back(peer);
  }
  options.top_sites = f.top;
  if (f.format == "html" && f.out.empty()) {
    throw InputError("--format html: give the page to write with -o FILE.html");
  }
  if (f.batch_runs.empty() != f.batch.empty()) {
    throw InputError(
        "--batch-runs and --batch: give both (two runs of the program and their batch sizes), or neither");
  }
  if (f.multiprocessors != 0 && f.batch_runs.empty()) {
    throw InputError(
        "--multiprocessors: it sizes the batch runs' model; give it with --batch-runs and --batch");
  }
  std::optional<doctor::DoctorInput> run_a;
  std::optional<doctor::DoctorInput> run_b;
  if (!f.batch_runs.empty()) {
    if (f.batch_runs.size() != 2) {
      throw InputError(fmt::format("--batch-runs: give two snapshots (A,B), not {}", f.batch_runs.size()));
    }
    doctor::BatchPair batches = doctor::BatchPair::parse(f.batch, "--batch");
    run_a.emplace(doctor::load_input(f.batch_runs[0]));
    run_b.emplace(doctor::load_input(f.batch_runs[1]));
    options.batch_runs = doctor::BatchRuns{&*run_a, &*run_b, std::move(batches), f.multiprocessors};
  }
  const doctor::DoctorReport report = doctor::diagnose(doctor::load_input(f.snapshot), options);
  const nlohmann::json doc = doctor::doctor_document(report);
  if (f.format == "html") {
    const TempDir dir("doctor");
    const std::filesystem::path json = dir.path() / "doctor.json";
    write_file_atomically(json, json_text(doc) + "\n", "the doctor's document");
    const std::string_view what = "memstress doctor --format html";
    return run_program(
        python_module("memstress.report", {json.string(), "-o", f.out}, "memstress doctor", what), what);
  }
  if (!f.out.empty()) {
    write_file_atomically(f.out, json_text(doc, 2) + "\n", "--out");
  }
  // The text quotes the program's file names and frames: printed so that none of their bytes reach the
  // terminal as control characters (JSON escapes them by its own rules).
  print_all(f.format == "json" ? json_text(doc, 2) + "\n" : terminal_lines(doctor::format_doctor(report)));
  return 0;
}

}  // namespace

Subcommand add_doctor(CLI::App& app) {
  auto flags = std::make_shared<DoctorFlags>();
  CLI::App* sub = app.add_subcommand(
      "doctor",
      "Answers from a PyTorch memory snapshot: the peak and who holds it, the OOM's cause and the "
      "setting that avoids it, every setting at each capacity, growth");
  sub->add_option(
         "SNAPSHOT", flags->snapshot,
         "A PyTorch memory snapshot (torch.cuda.memory._dump_snapshot; with or without stack frames), "
         "an RMM log or a memstress trace; plain or .gz")
      ->required();
  sub->add_option(
      "--capacity", flags->capacity,
      "GPU memory PyTorch may use, one or more (24G,40G,80G); default: the recorded GPU's when the "
      "snapshot says");
  CLI::Option* alloc_conf =
      sub->add_option("--alloc-conf", flags->alloc_conf,
                      "The PYTORCH_CUDA_ALLOC_CONF the program ran with, when the snapshot "
                      "does not say ('' for PyTorch's defaults)");
  sub->add_option("--trace-device", flags->trace_device,
                  "The device to diagnose, e.g. cuda:1 (default: the first)");
  sub->add_option("--format", flags->format, "table, json (memstress.doctor/1) or html (with -o)")
      ->check(CLI::IsMember({"table", "json", "html"}))
      ->capture_default_str();
  sub->add_option("-o,--out", flags->out, "Write the JSON document here (the HTML page with --format html)")
      ->check(a_path());
  sub->add_option(
         "-a,--allocator", flags->peers,
         fmt::format("Also replay these allocators, each once, beside the settings table: any of {}, or "
                     "{} (comma-separated; those that need a GPU use GPU 0)",
                     fmt::join(allocator_names(), ", "), kPluginForm))
      ->delimiter(',');
  sub->add_option(
         "--batch-runs", flags->batch_runs,
         "Two complete runs of the program at two batch sizes (A,B): for an OOM no setting avoids, the "
         "largest batch that fits the limit (as predict-batch finds it)")
      ->delimiter(',');
  sub->add_option("--batch", flags->batch, "The batch sizes of --batch-runs, in their order (e.g. 8,16)");
  sub->add_option("--multiprocessors", flags->multiprocessors,
                  "With --batch-runs: the GPU's streaming multiprocessors, where the runs do not say "
                  "(predict-batch --multiprocessors)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{65536}));
  sub->add_option("--top", flags->top, "Sites shown at the peak")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1000}))
      ->capture_default_str();
  return {sub, [flags, alloc_conf] {
            flags->alloc_conf_given = alloc_conf->count() > 0;
            return doctor_command(*flags);
          }};
}

}  // namespace memstress::app
