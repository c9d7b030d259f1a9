#pragma once

// Every file memstress writes as an output (--out, --junit, --snapshot, --timeline, the doctor's and
// predict-batch's documents, accept's --write and --junit) goes through here.
//
// Note [Outputs that cannot destroy]
// A file is written whole or not at all: to a temporary file in the same directory, flushed to disk, then
// renamed over the target, so readers see the old file or the whole new one. A rename replaces whatever
// the name points at, so before anything is written the target is checked: it must not exist, or be a
// regular file (a symbolic link to one is followed: the file it names is replaced, the link kept). A
// character device (`--out /dev/null` run as root would turn /dev/null into a JSON file), a FIFO, a socket,
// a directory or a dangling link is refused, exit 2, naming the flag. The check runs again right before
// the rename, since the run in between may be long.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace memstress {

// Throws InputError naming `what` when `path` cannot be an output: empty, an existing target that is not a
// regular file, or a directory that does not exist or is not writable. Call it before a long run.
void check_output_path(const std::filesystem::path& path, std::string_view what);

// One output of a command: the flag that names it ("--junit", "--out's stream") and its path.
struct NamedOutput {
  std::string flag;
  std::filesystem::path path;
};

// Throws InputError naming both flags when two of `outputs` are one file: the same path however spelt
// (`./x.json` and `x.json`, `a/../x.json`), through symbolic links, or hard links to one file. Each output is
// written whole and renamed into place, so two outputs on one file leave only the last written, the other's
// data lost with exit 0. Empty paths (outputs not asked for) are skipped.
void check_distinct_outputs(const std::vector<NamedOutput>& outputs);

// Writes one output file through a temporary, in pieces (a results document of thousands of rows is never
// held in memory whole). Nothing is visible at `path` until commit(); a writer destroyed uncommitted
// removes its temporary file.
class AtomicFileWriter {
 public:
  // Checks the target (check_output_path) and creates the temporary. Throws InputError naming `what`.
  AtomicFileWriter(const std::filesystem::path& path, std::string_view what);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  AtomicFileWriter(AtomicFileWriter&&) = delete;
  AtomicFileWriter& operator=(AtomicFileWriter&&) = delete;

  void write(std::string_view bytes);
  // Flushes to disk and renames the temporary over the target. Call once.
  void commit();

 private:
  [[noreturn]] void fail(std::string_view step) const;

  std::filesystem::path target_;  // symbolic links resolved
  std::filesystem::path tmp_;
  std::string what_;
  int fd_ = -1;
};

// Writes `content` to `path` through an AtomicFileWriter.
void write_file_atomically(const std::filesystem::path& path, std::string_view content,
                           std::string_view what);

}  // namespace memstress
