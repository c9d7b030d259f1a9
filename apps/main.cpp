// memstress: the command line. Thin: parses, then calls the harness. Exit codes: 0 ok, 1 a check
// failed, 2 bad usage or input, 3 environment missing (docs/run.md).

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string_view>
#include <system_error>

#include "apps/commands.hpp"
#include "harness/core/data_dir.hpp"
#include "harness/core/error.hpp"
#include "harness/core/launcher.hpp"
#include "harness/core/version.hpp"

// What throws outside the try below (CLI11 building the options) is a programming error: it ends the
// process with its message.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape): see above
  using memstress::ExitCode;
  using memstress::to_int;
  CLI::App app{
      "memstress: GPU memory stress tests and benchmarks (allocators, transfers, fragmentation, OOM)",
      "memstress"};
  app.set_version_flag("--version", memstress::version_string());
  app.require_subcommand(1);
  app.failure_message(CLI::FailureMessage::help);

  const std::vector<memstress::app::Subcommand> commands{
      memstress::app::add_devices(app),
      memstress::app::add_list(app),
      memstress::app::add_run(app, std::vector<std::string>(argv, argv + argc)),
      memstress::app::add_accept(app, std::vector<std::string>(argv, argv + argc)),
      memstress::app::add_burn(app, std::vector<std::string>(argv, argv + argc)),
      memstress::app::add_compare(app),
      memstress::app::add_replay(app),
      memstress::app::add_doctor(app),
      memstress::app::add_predict_batch(app),
      memstress::app::add_report(app),
      memstress::app::add_db(app),
  };

  // `PYTHONPATH=$(memstress --python-path) python3 train.py`: the recorder PyTorch programs import, wherever
  // this memstress is (share/memstress/python installed, python/ of the checkout for a build tree).
  bool python_path = false;  // handled below, before the parse that asks for a subcommand
  app.add_flag("--python-path", python_path,
               "Print the directory of memstress_torch.py, the PyTorch recorder, for PYTHONPATH, and exit");
  if (argc == 2 && std::string_view(argv[1]) == "--python-path") {
    try {
      fmt::print("{}\n", memstress::python_dir("the PyTorch recorder (memstress_torch.py)").string());
      return 0;
    } catch (const memstress::Error& e) {
      fmt::print(stderr, "memstress: error: {}\n", e.what());
      return to_int(e.exit_code());
    }
  }

  // CLI11 reports an unknown subcommand as a missing one; name it instead.
  const auto is_subcommand = [&](const char* word) {
    return std::any_of(commands.begin(), commands.end(),
                       [&](const auto& c) { return c.app->check_name(word); });
  };
  if (argc > 1 && argv[1][0] != '-' && !is_subcommand(argv[1])) {
    fmt::print(
        stderr,
        "memstress: unknown subcommand '{}'; choose devices, list, run, compare, accept, replay, doctor, "
        "predict-batch, report or db (see "
        "'memstress --help')\n",
        argv[1]);
    return to_int(ExitCode::bad_input);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "memstress: {}\nRun 'memstress --help' or 'memstress SUBCOMMAND --help'.\n", e.what());
    return to_int(ExitCode::bad_input);
  }

  // Note [Output that could not be written]: stdout on a full disk (or /dev/full) loses what the command
  // printed; fmt::print throws where a write fails, and what the C library buffered fails at the flush.
  // Either is said in one line, exit 3 (the environment lacks room for the output), never exit 0 with a file
  // cut short.
  const auto cannot_write = [](const std::string& why) {
    fmt::print(stderr, "{}error: cannot write the output to standard output: {}\n", memstress::note_prefix(),
               why);
    return to_int(ExitCode::env_missing);
  };
  try {
    for (const auto& command : commands) {
      if (command.app->parsed()) {
        const int rc = command.run();
        if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
          return cannot_write(std::error_code(errno, std::generic_category()).message());
        }
        return rc;
      }
    }
    return to_int(ExitCode::bad_input);
  } catch (const std::system_error& e) {  // fmt's failed write to stdout
    if (std::ferror(stdout) != 0) {
      return cannot_write(e.code().message());
    }
    fmt::print(stderr, "{}internal error: {}\n", memstress::note_prefix(), e.what());
    return to_int(ExitCode::check_failed);
  } catch (const memstress::ReportedInputError& e) {  // its line is printed already
    return to_int(e.exit_code());
  } catch (const memstress::Error& e) {
    fmt::print(stderr, "{}error: {}\n", memstress::note_prefix(), e.what());
    return to_int(e.exit_code());
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}internal error: {}\n", memstress::note_prefix(), e.what());
    return to_int(ExitCode::check_failed);
  }
}
