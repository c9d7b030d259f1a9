#pragma once

// Where memstress finds its own files: the scripts users call through it (report, the snapshot
// converter), the results schemas and the shipped acceptance profiles.
//
// Note [Where memstress finds its files]
// The binary carries no path into the source tree, so that an installed memstress works wherever it was
// installed and whatever happens to the checkout it was built from. `cmake --install` puts the binary in
// <prefix>/bin and the files in <prefix>/share/memstress; the binary finds them relative to its own
// location (/proc/self/exe), through MEMSTRESS_DATA_RELDIR, the relative path from the binary's directory
// to the data directory that CMake computes from the install directories (GNUInstallDirs). The build
// tree mirrors that layout: configuring makes build/<preset>/share/memstress with links to scripts/,
// profiles/ and results/schema/ of the checkout, so a built binary behaves as an installed one does, and
// an edited script takes effect without a rebuild. The data directory is recognized by what it holds
// (profiles/), never assumed.

#include <filesystem>
#include <optional>
#include <string_view>

namespace memstress {

// The data directory, or nothing when the binary's neighbourhood holds none (a binary copied elsewhere).
[[nodiscard]] std::optional<std::filesystem::path> data_dir();

// data_dir() / relative, which must exist; throws EnvironmentError (exit 3) naming `what` and where it
// looked otherwise.
[[nodiscard]] std::filesystem::path data_path(const std::filesystem::path& relative, std::string_view what);

}  // namespace memstress
