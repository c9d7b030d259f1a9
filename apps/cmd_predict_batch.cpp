// memstress predict-batch SNAP_A SNAP_B --batch A,B: the largest batch that fits a capacity under a
// setting, from one program recorded at two batch sizes (harness/doctor/batch_model.hpp, Note [A request
// as a function of the batch]). Exit 0 when the search ran, 2 for bad input, 3 when the converter cannot
// run.

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <iterator>
#include <memory>
#include <optional>

#include "apps/commands.hpp"
#include "apps/flag_names.hpp"
#include "harness/alloc/alloc_config.hpp"
#include "harness/core/atomic_file.hpp"
#include "harness/core/error.hpp"
#include "harness/core/json_text.hpp"
#include "harness/core/text_table.hpp"
#include "harness/core/units.hpp"
#include "harness/doctor/batch_format.hpp"
#include "harness/doctor/batch_model.hpp"

namespace memstress::app {
namespace {

constexpr std::uint64_t kMaxBatch = std::uint64_t{1} << 40;

struct PredictFlags {
  std::string snapshot_a;
  std::string snapshot_b;
  std::string batch;
  std::string capacity;
  std::string alloc_conf;
  std::string trace_device;
  std::string format = "table";
  std::string out;
  std::uint64_t max_batch = 1'000'000;
  std::uint64_t multiprocessors = 0;  // 0: the recorder's, where it stored them
  std::string write_trace;            // N:FILE
};

int predict_command(const PredictFlags& f) {
  const doctor::BatchPair batches = doctor::BatchPair::parse(f.batch, "--batch");
  const std::uint64_t batch_a = batches.first();
  const std::uint64_t batch_b = batches.second();
  if (!f.out.empty()) {
    check_output_path(f.out, "--out");  // before the replays, not after them
  }
  std::optional<std::uint64_t> capacity;
  if (!f.capacity.empty()) {
    capacity = doctor::parse_capacity(f.capacity, "--capacity");
  }
  std::optional<AllocConfig> given;
  if (!f.alloc_conf.empty()) {
    given = AllocConfig::parse(f.alloc_conf, "--alloc-conf");
  }
  const doctor::DoctorInput a = doctor::load_input(f.snapshot_a);
  const doctor::DoctorInput b = doctor::load_input(f.snapshot_b);
  if (!capacity) {
    capacity = a.facts.recorded_number("allocator_capacity");
  }
  if (!capacity) {
    throw InputError(
        fmt::format("{}: the snapshot does not say how much memory the GPU had: give --capacity "
                    "(e.g. --capacity 40G)",
                    f.snapshot_a));
  }
  // Note [The setting a program ran with].
  const doctor::SettingInForce in_force =
      doctor::setting_in_force(given, "--alloc-conf", a.facts, f.snapshot_a, "the first snapshot");
  const doctor::BatchModel model =
      doctor::build_batch_model(a, b, batches, f.trace_device, "--trace-device",
                                doctor::gpu_of_runs(a, b, *capacity, f.multiprocessors));
  const doctor::BatchAnswer answer = doctor::search_batch(model, in_force.setting, *capacity, f.max_batch);
  if (!f.write_trace.empty()) {
    const std::size_t colon = f.write_trace.find(':');
    std::uint64_t n = 0;
    const std::string number = f.write_trace.substr(0, colon);
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), n);
    if (colon == std::string::npos || ec != std::errc() || end != number.data() + number.size() || n == 0 ||
        n > kMaxBatch || colon + 1 == f.write_trace.size()) {
      throw InputError(
          fmt::format("--write-trace '{}': give BATCH:FILE, e.g. 64:batch64.trace.csv", f.write_trace));
    }
    write_file_atomically(
        f.write_trace.substr(colon + 1),
        replay::format_replay_trace(doctor::trace_at(model, n),
                                    fmt::format("predicted by memstress predict-batch at batch {} "
                                                "from {} (batch {}) and {} (batch {})",
                                                n, f.snapshot_a, batch_a, f.snapshot_b, batch_b)),
        "--write-trace");
  }

  doctor::BatchReport report{f.snapshot_a, f.snapshot_b,    batch_a,     batch_b,       &a, &b, &model,
                             &answer,      in_force.origin, f.max_batch, doctor_flags()};
  const nlohmann::json doc = doctor::batch_document(report);
  if (!f.out.empty()) {
    write_file_atomically(f.out, json_text(doc, 2) + "\n", "--out");
  }
  print_all(f.format == "json" ? json_text(doc, 2) + "\n" : terminal_lines(doctor::format_batch(report)));
  return 0;
}

}  // namespace

Subcommand add_predict_batch(CLI::App& app) {
  auto flags = std::make_shared<PredictFlags>();
  CLI::App* sub = app.add_subcommand(
      "predict-batch", "The largest batch that fits, from two snapshots of one program at two batch sizes");
  sub->add_option("SNAP_A", flags->snapshot_a, "The snapshot at the first batch size")->required();
  sub->add_option("SNAP_B", flags->snapshot_b, "The snapshot at the second batch size")->required();
  sub->add_option("--batch", flags->batch, "The two batch sizes, in the snapshots' order (e.g. 8,16)")
      ->required();
  sub->add_option("--capacity", flags->capacity,
                  "GPU memory PyTorch may use (e.g. 40G); default: the first snapshot's GPU, when it says");
  sub->add_option("--alloc-conf", flags->alloc_conf,
                  "The PYTORCH_CUDA_ALLOC_CONF to judge with (default: the first snapshot's)");
  sub->add_option("--trace-device", flags->trace_device, "The device of the snapshots, e.g. cuda:1");
  sub->add_option("--max-batch", flags->max_batch, "Search no higher than this")
      ->check(CLI::Range(std::uint64_t{1}, kMaxBatch))
      ->capture_default_str();
  sub->add_option("--multiprocessors", flags->multiprocessors,
                  "The GPU's streaming multiprocessors, where the snapshots do not say (caps the scratch of "
                  "PyTorch's reductions)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{65536}));
  sub->add_option("--format", flags->format, "table or json (memstress.predict-batch/1)")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  sub->add_option("-o,--out", flags->out, "Write the JSON document here")->check(a_path());
  sub->add_option("--write-trace", flags->write_trace,
                  "BATCH:FILE: also write the predicted trace at that batch (a memstress trace to replay)")
      ->check(a_path());
  return {sub, [flags] { return predict_command(*flags); }};
}

}  // namespace memstress::app
