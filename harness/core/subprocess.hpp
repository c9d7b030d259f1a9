#pragma once

// Running another program: the Python helpers that `memstress report` and `memstress replay SNAPSHOT`
// call (scripts/report, scripts/torch_snapshot_to_trace.py), so that users need not know where they live.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace memstress {

// Runs `program` with `args` (not counting argv[0], which is the program's path), with this process's
// environment, stdin, stdout and stderr, and waits for it. Returns its exit code, or 128 + the signal
// that ended it. Throws EnvironmentError naming `what` when it cannot be started.
int run_program(const std::filesystem::path& program, const std::vector<std::string>& args,
                std::string_view what);

// Replaces this process with `program` (its exit code becomes memstress's). Returns only by throwing
// EnvironmentError naming `what` when it cannot be started.
[[noreturn]] void exec_program(const std::filesystem::path& program, const std::vector<std::string>& args,
                               std::string_view what);

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
