#pragma once

// The `memstress` subcommands. Each adds itself to the CLI11 app and returns the function main() calls
// when it was chosen; that function returns the process exit code or throws memstress::Error.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace memstress::app {

struct Subcommand {
  CLI::App* app;             // parsed() tells whether it was chosen
  std::function<int()> run;  // returns the exit code
};

// For options that name a file: an empty value is refused (exit 2, naming the option), not taken for "none".
inline const CLI::Validator& a_path() {
  static const CLI::Validator validator(
      [](const std::string& value) {
        return value.empty() ? std::string("an empty path; name a file") : std::string();
      },
      "PATH");
  return validator;
}

// "8,16": two batch sizes (predict-batch's and doctor's --batch); throws InputError naming --batch.
std::pair<std::uint64_t, std::uint64_t> parse_batch_pair(const std::string& text);

Subcommand add_compare(CLI::App& app);
Subcommand add_db(CLI::App& app);
Subcommand add_devices(CLI::App& app);
Subcommand add_doctor(CLI::App& app);
Subcommand add_list(CLI::App& app);
Subcommand add_predict_batch(CLI::App& app);
Subcommand add_replay(CLI::App& app);
Subcommand add_report(CLI::App& app);
Subcommand add_run(CLI::App& app, std::vector<std::string> argv);
Subcommand add_accept(CLI::App& app, std::vector<std::string> argv);

}  // namespace memstress::app
