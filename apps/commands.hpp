#pragma once

// The `memstress` subcommands. Each adds itself to the CLI11 app and returns the function main() calls
// when it was chosen; that function returns the process exit code or throws memstress::Error.

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memstress::app {

struct Subcommand {
  CLI::App* app;             // parsed() tells whether it was chosen
  std::function<int()> run;  // returns the exit code
};

// For options that name a file: an empty value is refused (exit 2, naming the option), not taken for "none".
inline const CLI::Validator& a_path() {
  static const CLI::Validator kValidator(
      [](const std::string& value) {
        return value.empty() ? std::string("an empty path; name a file") : std::string();
      },
      "PATH");
  return kValidator;
}

// For floating-point options: NaN passes every range check (each comparison with it is false), so it is
// refused first, with infinities ("nan", "inf" and their spellings are numbers to strtod).
inline const CLI::Validator& a_finite_number() {
  static const CLI::Validator kValidator(
      [](const std::string& value) {
        double number = 0;
        if (!CLI::detail::lexical_cast(value, number)) {
          return std::string("'" + value + "' is not a number");
        }
        return std::isfinite(number) ? std::string() : std::string("'" + value + "' is not a finite number");
      },
      "NUMBER");
  return kValidator;
}

// All of `text` on stdout, whatever bytes it holds: fputs(text.c_str()) stopped at the first NUL (a GPU
// name holding one cut an export short, exit 0).
inline void print_all(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
}

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
Subcommand add_burn(CLI::App& app, std::vector<std::string> argv);

}  // namespace memstress::app
