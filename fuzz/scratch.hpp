#pragma once

// For the fuzz targets that read files (trace_file, snapshot_facts): a directory of this process's own under
// the system's temporary directory, made on first use and removed at exit, and the input written into it.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

#include "fuzz/fuzz_target.hpp"

namespace memstress::fuzz {

class Scratch {
 public:
  // `tag` names the target in the directory's name: memstress-fuzz-<tag>-<pid>.
  explicit Scratch(const std::string& tag)
      : dir_(std::filesystem::temp_directory_path() /
             ("memstress-fuzz-" + tag + "-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  Scratch(Scratch&&) = delete;
  Scratch& operator=(Scratch&&) = delete;
  ~Scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  [[nodiscard]] std::filesystem::path file(const char* name) const { return dir_ / name; }

 private:
  std::filesystem::path dir_;
};

// `bytes` as the whole of the file at `path`; a failure to write is a finding of the harness, not the parser.
inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  check(out.good(), "cannot write the fuzz input's file");
}

}  // namespace memstress::fuzz
