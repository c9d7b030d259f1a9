#include "harness/core/subprocess.hpp"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "harness/core/error.hpp"

// The process's environment, as posix_spawn takes it: POSIX declares it in no header.
// NOLINTNEXTLINE(readability-redundant-declaration,cppcoreguidelines-avoid-non-const-global-variables)
extern char** environ;

namespace memstress {
namespace {

// argv for the exec family: the program's path, the args, a null pointer. The strings stay owned by
// the caller's vectors, which outlive the call.
std::vector<char*> make_argv(const std::string& program, const std::vector<std::string>& args) {
  std::vector<char*> argv;
  argv.reserve(args.size() + 2);
  argv.push_back(const_cast<char*>(program.c_str()));  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  for (const std::string& arg : args) {
    argv.push_back(const_cast<char*>(arg.c_str()));  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  }
  argv.push_back(nullptr);
  return argv;
}

}  // namespace

int run_program(const Command& command, std::string_view what) {
  const std::string path = command.program.string();
  std::vector<char*> argv = make_argv(path, command.args);
  // The child starts with no signal blocked, whatever the caller blocks (an InterruptWatch blocks SIGINT and
  // SIGTERM in every thread): Ctrl-C must reach the helper program too.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, path.c_str(), nullptr, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    throw EnvironmentError(fmt::format("{}: cannot start {}: {}", what, path, std::strerror(rc)));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      throw EnvironmentError(fmt::format("{}: lost {} (waitpid: {})", what, path, std::strerror(errno)));
    }
  }
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status);
  }
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

void exec_program(const Command& command, std::string_view what) {
  const std::string path = command.program.string();
  std::vector<char*> argv = make_argv(path, command.args);
  std::fflush(stdout);
  std::fflush(stderr);
  execv(path.c_str(), argv.data());
  throw EnvironmentError(fmt::format("{}: cannot start {}: {}", what, path, std::strerror(errno)));
}

TempDir::TempDir(std::string_view purpose) {
  const char* base = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): read before any thread starts
  std::string templ =
      fmt::format("{}/memstress-{}-XXXXXX", base != nullptr && *base != '\0' ? base : "/tmp", purpose);
  if (mkdtemp(templ.data()) == nullptr) {
    throw EnvironmentError(
        fmt::format("cannot make a temporary directory {}: {}", templ, std::strerror(errno)));
  }
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace memstress
