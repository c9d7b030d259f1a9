#include "harness/core/version.hpp"

#include <fmt/format.h>

#include <string_view>

namespace memstress {

std::string version_string() {
  const VersionInfo info = version_info();
  const std::string_view sha = info.git_sha;
  return fmt::format("{} (git {}{})", info.version, sha.substr(0, 12), info.dirty ? ", dirty" : "");
}

}  // namespace memstress
