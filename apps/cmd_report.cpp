// memstress report RESULTS... -o report.html: the HTML report with plots, drawn by the report that was
// installed with this binary (python3 -m memstress.report, python/memstress/report under the data
// directory, Note [Where memstress finds its files]), so that users need not know where it lives.
// Everything after `report` goes to it as it is; its exit code is memstress's (0 written, 2 bad input, 3 no
// python with matplotlib).

#include <memory>

#include "apps/commands.hpp"
#include "harness/core/data_dir.hpp"
#include "harness/core/subprocess.hpp"

namespace memstress::app {

Subcommand add_report(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("report",
                                     "Draw results into one HTML page (runs the installed python3 -m "
                                     "memstress.report; see 'memstress report -h')");
  sub->prefix_command();  // every argument goes to the script, --help and -o included
  sub->set_help_flag();
  return {sub, [sub]() -> int {
            exec_program(
                python_module("memstress.report", sub->remaining(), "memstress report", "memstress report"),
                "memstress report");
          }};
}

}  // namespace memstress::app
