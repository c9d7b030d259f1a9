#pragma once

// Running another program: the Python that `memstress report` and `memstress replay SNAPSHOT` run (the
// report, the snapshot converter: python_module in harness/core/data_dir.hpp), so that users need not know
// where it lives.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace memstress {

// A program to start (its path: no PATH search) and its arguments, not counting argv[0], which is the
// program's path.
struct Command {
  std::filesystem::path program;
  std::vector<std::string> args;
};

// Runs the command with this process's environment, stdin, stdout and stderr, and waits for it. Returns
// its exit code, or 128 + the signal that ended it. Throws EnvironmentError naming `what` when it cannot
// be started.
int run_program(const Command& command, std::string_view what);

// Replaces this process with the command (its exit code becomes memstress's). Returns only by throwing
// EnvironmentError naming `what` when it cannot be started.
[[noreturn]] void exec_program(const Command& command, std::string_view what);

// A private directory under $TMPDIR (or /tmp), removed with everything in it when this goes away.
class TempDir {
 public:
  explicit TempDir(std::string_view purpose);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  TempDir(TempDir&&) = delete;
  TempDir& operator=(TempDir&&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace memstress
