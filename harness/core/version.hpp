#pragma once

#include <string>

namespace memstress {

struct VersionInfo {
  const char* version;  // project version, e.g. "0.1.0"
  const char* git_sha;  // full sha of the commit built, or "unknown"
  bool dirty;           // tracked files differed from that commit at build time
};

// Defined in the generated git_version.cpp (cmake/WriteGitVersion.cmake).
VersionInfo version_info() noexcept;

// "0.1.0 (git 1a2b3c4d5e6f, dirty)"
std::string version_string();

}  // namespace memstress
