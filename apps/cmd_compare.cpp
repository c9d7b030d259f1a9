// memstress compare BASE NEW: reads two results files, judges every metric's change and prints it
// (harness/compare). Exit 1 on a regression (a metric WORSE, or a row pass -> fail/error) or when nothing was
// compared (either side has no rows, or no row matched: it says why), 2 on bad input.

#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "apps/commands.hpp"
#include "apps/flag_names.hpp"
#include "harness/compare/compare.hpp"
#include "harness/compare/format.hpp"
#include "harness/core/exit_code.hpp"
#include "harness/core/json_text.hpp"

namespace memstress::app {
namespace {

struct CompareFlags {
  std::string base;
  std::string next;
  std::string threshold = "5";
  std::string format = "table";
  bool match_any_gpu = false;
};

int compare_command(const CompareFlags& f) {
  compare::CompareOptions options;
  options.threshold_pct = compare::parse_threshold(f.threshold, "--threshold");
  options.match_any_gpu = f.match_any_gpu;
  options.match_any_gpu_flag = "--match-any-gpu";
  options.output_options = run_output_options();
  options.output_switches = run_output_switches();
  const Results base = load_results(f.base, "BASE");
  const Results next = load_results(f.next, "NEW");
  const compare::Comparison c = compare::compare_results(base, next, options);
  const std::string out =
      f.format == "json" ? json_text(compare::comparison_json(c), 2) + "\n" : compare::format_table(c);
  print_all(out);
  return to_int(c.failed() ? ExitCode::check_failed : ExitCode::ok);
}

}  // namespace

Subcommand add_compare(CLI::App& app) {
  auto flags = std::make_shared<CompareFlags>();
  CLI::App* sub = app.add_subcommand(
      "compare", "Compare two results files (memstress run --out, or Google Benchmark JSON): BASE, then NEW");
  sub->add_option("BASE", flags->base, "The results to compare against (e.g. the old driver's)")->required();
  sub->add_option("NEW", flags->next, "The results to judge (e.g. the new driver's)")->required();
  sub->add_option("--threshold", flags->threshold,
                  "Smallest change of a median that counts, in percent (smaller ones are SAME)")
      ->capture_default_str();
  sub->add_flag(
      "--match-any-gpu", flags->match_any_gpu,
      "Match rows whatever their GPU model (by default an H100 row is compared only with an H100 row)");
  sub->add_option("--format", flags->format, "stdout format: table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  return {sub, [flags] { return compare_command(*flags); }};
}

}  // namespace memstress::app
