// list, run, accept and burn in the build without CUDA (Note [The build without CUDA], cmake/HostOnly.cmake;
// compiled instead of cmd_list.cpp, cmd_run.cpp, cmd_accept.cpp and cmd_burn.cpp): the workloads run on a
// GPU, or on the simulated device beside the GPU's code, and this build has neither. The subcommands are
// still there, so that `memstress run ...` says what is missing (exit 3) rather than calling `run` an
// unknown subcommand.

#include <fmt/format.h>

#include "apps/commands.hpp"
#include "harness/core/error.hpp"

namespace memstress::app {
namespace {

Subcommand unavailable(CLI::App& app, const char* name, const char* what) {
  CLI::App* sub =
      app.add_subcommand(name, fmt::format("{} (not in this build: it was built without CUDA)", what));
  sub->allow_extras();
  sub->prefix_command();  // whatever follows is taken, and refused when run
  return {sub, [name]() -> int {
            throw EnvironmentError(fmt::format(
                "memstress {}: this memstress was built without CUDA (the pip wheel holds the host tools: "
                "doctor, predict-batch, replay, compare, report, db); build memstress from a checkout for it "
                "(docs/install.md)",
                name));
          }};
}

}  // namespace

// run, accept and burn keep the signatures of the GPU build's (apps/commands.hpp), which take argv by value.
Subcommand add_list(CLI::App& app) {
  return unavailable(app, "list", "List the workloads and their axes");
}

// NOLINTNEXTLINE(performance-unnecessary-value-param)
Subcommand add_run(CLI::App& app, std::vector<std::string> /*argv*/) {
  return unavailable(app, "run", "Run workloads");
}

// NOLINTNEXTLINE(performance-unnecessary-value-param)
Subcommand add_accept(CLI::App& app, std::vector<std::string> /*argv*/) {
  return unavailable(app, "accept", "Hardware acceptance: PASS/FAIL per check against a profile");
}

// NOLINTNEXTLINE(performance-unnecessary-value-param)
Subcommand add_burn(CLI::App& app, std::vector<std::string> /*argv*/) {
  return unavailable(app, "burn", "Burn-in: verified stress for as long as asked");
}

}  // namespace memstress::app
