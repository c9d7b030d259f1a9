#pragma once

// Where memstress finds its own files: the Python it runs (the package memstress: the report, the snapshot
// converter), the results schemas and the shipped acceptance profiles.
//
// Note [Where memstress finds its files]
// The binary carries no path into the source tree, so that an installed memstress works wherever it was
// installed and whatever happens to the checkout it was built from. `cmake --install` puts the binary in
// <prefix>/bin and the files in <prefix>/share/memstress; the binary finds them relative to its own
// location (/proc/self/exe), through MEMSTRESS_DATA_RELDIR, the relative path from the binary's directory
// to the data directory that CMake computes from the install directories (GNUInstallDirs). The build
// tree mirrors that layout: configuring makes build/<preset>/share/memstress with links to python/,
// scripts/, profiles/ and results/schema/ of the checkout, so a built binary behaves as an installed one
// does, and an edited Python module takes effect without a rebuild. The data directory is recognized by
// what it holds (profiles/), never assumed. Its Python is run as modules of the package memstress
// (python_module below), with the directory holding that package (<data directory>/python) first on
// PYTHONPATH, so that the copy installed with this binary is the one that runs whatever else is on the path.
//
// The wheel (pyproject.toml) lays the same files out as Python's packages are laid out: the package memstress
// and memstress_torch.py in site-packages, the binary in memstress/_bin/ and the rest in memstress/_data/. So
// the directory of the Python is configured too, relative to the data directory (MEMSTRESS_PYTHON_RELDIR:
// "python", or the wheel's "../.."; cmake/InstallDirs.cmake). The wheel's `memstress` command is a launcher
// that pip writes for the python it installed into (memstress._launcher): it runs this binary with that
// python named in MEMSTRESS_LAUNCHER_PYTHON, and python_module runs it, so the binary called through that
// command by its absolute path, with no environment activated, runs its Python with the packages installed
// beside it.

#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "harness/core/subprocess.hpp"

namespace memstress {

// The data directory, or nothing when the binary's neighbourhood holds none (a binary copied elsewhere).
[[nodiscard]] std::optional<std::filesystem::path> data_dir();

// data_dir() / relative, which must exist; throws EnvironmentError (exit 3) naming `what` and where it
// looked otherwise.
[[nodiscard]] std::filesystem::path data_path(const std::filesystem::path& relative, std::string_view what);

// The directory holding the package memstress and memstress_torch.py (what `memstress --python-path`
// prints); throws as data_path does.
[[nodiscard]] std::filesystem::path python_dir(std::string_view what);

// `python3 -m MODULE ARGS...` for a module of the package memstress under python_dir() ("memstress.report"),
// with that directory put first on PYTHONPATH (before any PYTHONPATH of this process), and MEMSTRESS_PROG
// set to `prog`, the name the module prints its messages and usage under ("memstress report"). The python is
// the one
// MEMSTRESS_LAUNCHER_PYTHON names (the wheel's launcher), else python3, the first on PATH, found by
// /usr/bin/env as a script's `#!/usr/bin/env python3` line finds it (exit 127 where there is none); the
// module then moves to the python that has what it needs, the checkout's .venv first
// (python/memstress/_pyenv.py). Throws EnvironmentError (exit 3) naming `what` where the module's file is
// missing, as data_path does.
[[nodiscard]] Command python_module(std::string_view module, const std::vector<std::string>& args,
                                    std::string_view prog, std::string_view what);

}  // namespace memstress
