#include "harness/core/data_dir.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <system_error>
#include <utility>

#include "harness/core/error.hpp"

#if !defined(MEMSTRESS_DATA_RELDIR) || !defined(MEMSTRESS_PYTHON_RELDIR)
#error "MEMSTRESS_DATA_RELDIR and MEMSTRESS_PYTHON_RELDIR are set by harness/core/CMakeLists.txt"
#endif

namespace memstress {
namespace {

// The directory of the running binary, or empty where /proc/self/exe cannot be read.
std::filesystem::path binary_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

// Where data_dir() looks (for messages too).
std::filesystem::path expected_data_dir() {
  const std::filesystem::path dir = binary_dir();
  return dir.empty() ? dir : (dir / MEMSTRESS_DATA_RELDIR).lexically_normal();
}

}  // namespace

std::optional<std::filesystem::path> data_dir() {
  const std::filesystem::path dir = expected_data_dir();
  std::error_code ec;
  if (dir.empty() || !std::filesystem::is_directory(dir / "profiles", ec)) {
    return std::nullopt;
  }
  return dir;
}

std::filesystem::path data_path(const std::filesystem::path& relative, std::string_view what) {
  const std::optional<std::filesystem::path> dir = data_dir();
  if (!dir) {
    throw EnvironmentError(
        fmt::format("{}: memstress's files are not where this binary expects them ({}; install with "
                    "'cmake --install', "  // another program's command line
                    "or run the binary of a build tree)",
                    what, expected_data_dir().string()));
  }
  std::filesystem::path path = *dir / relative;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw EnvironmentError(fmt::format("{}: {} is missing (memstress's files at {} are incomplete)", what,
                                       path.string(), dir->string()));
  }
  return path;
}

std::filesystem::path python_dir(std::string_view what) {
  return data_path(MEMSTRESS_PYTHON_RELDIR, what).lexically_normal();
}

Command python_module(std::string_view module, const std::vector<std::string>& args, std::string_view prog,
                      std::string_view what) {
  const std::filesystem::path python = python_dir(what);
  std::string relative(module);
  std::replace(relative.begin(), relative.end(), '.', '/');
  std::filesystem::path source = std::filesystem::path(MEMSTRESS_PYTHON_RELDIR) / relative;
  std::error_code ec;
  if (std::filesystem::is_directory(python / relative, ec)) {
    source /= "__main__.py";  // a package runs its __main__.py
  } else {
    source += ".py";
  }
  (void)data_path(source, what);                 // missing: named, exit 3
  const char* path = std::getenv("PYTHONPATH");  // NOLINT(concurrency-mt-unsafe): memstress never sets it
  std::string python_path = "PYTHONPATH=" + python.string();
  if (path != nullptr && *path != '\0') {
    python_path += fmt::format(":{}", path);
  }
  // NOLINTNEXTLINE(concurrency-mt-unsafe): memstress never sets it
  const char* launcher = std::getenv("MEMSTRESS_LAUNCHER_PYTHON");
  std::string interpreter = launcher != nullptr && *launcher != '\0' ? std::string(launcher) : "python3";
  Command command{"/usr/bin/env",
                  {std::move(python_path), fmt::format("MEMSTRESS_PROG={}", prog), std::move(interpreter),
                   "-m", std::string(module)}};  // another program's command line
  command.args.insert(command.args.end(), args.begin(), args.end());
  return command;
}

}  // namespace memstress
