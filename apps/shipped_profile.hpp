#pragma once

// `accept --profile NAME`: a profile file, or the name of one shipped with memstress (h100, h200), found in
// the data directory (harness/core/data_dir.hpp) wherever memstress was installed.

#include <string>

namespace memstress::app {

struct ProfileChoice {
  std::string path;      // the file to read
  bool shipped = false;  // one of memstress's own (never to be overwritten by --train)
};

// `arg` when it names a file; else the shipped profile `arg` or `arg`.yaml. Throws InputError naming
// --profile and the shipped profiles when neither exists.
ProfileChoice choose_profile(const std::string& arg);

}  // namespace memstress::app
