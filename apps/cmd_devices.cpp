// memstress devices: what a run would run on — GPUs, driver, CUDA, NCCL, MPI, host.

#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "apps/commands.hpp"
#include "harness/core/json_text.hpp"
#include "harness/env/environment.hpp"

namespace memstress::app {

Subcommand add_devices(CLI::App& app) {
  auto format = std::make_shared<std::string>("table");
  CLI::App* sub =
      app.add_subcommand("devices", "Show the GPUs, driver, CUDA, NCCL, MPI and host a run would use");
  sub->add_option("--format", *format, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  return {sub, [format] {
            const Environment env = collect_environment();
            if (*format == "json") {
              fmt::print("{}\n", json_text(to_json(env), 2));
            } else {
              fmt::print("{}", format_environment(env));
            }
            return 0;
          }};
}

}  // namespace memstress::app
