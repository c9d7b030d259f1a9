#include "apps/shipped_profile.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <system_error>
#include <vector>

#include "harness/core/data_dir.hpp"
#include "harness/core/error.hpp"

namespace memstress::app {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> shipped_names(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".yaml") {
      names.push_back(entry.path().stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

ProfileChoice choose_profile(const std::string& arg) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(arg, ec)) || arg.find('/') != std::string::npos) {
    return {arg, false};  // a path (whatever it is: a FIFO too): load_profile names it if it cannot be read
  }
  const std::optional<fs::path> data = data_dir();
  if (!data) {
    return {arg, false};
  }
  const fs::path dir = *data / "profiles";
  for (const fs::path& candidate : {dir / arg, dir / (arg + ".yaml")}) {
    if (fs::is_regular_file(candidate, ec)) {
      return {candidate.string(), true};
    }
  }
  throw InputError(
      fmt::format("--profile {}: no such file, and no shipped profile of that name (shipped, in {}: {})", arg,
                  dir.string(), fmt::join(shipped_names(dir), ", ")));
}

}  // namespace memstress::app
