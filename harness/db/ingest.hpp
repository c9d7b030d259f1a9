#pragma once

// `memstress db ingest`: each file read, hashed, parsed by the results loader (harness/compare, the
// one parser of results files) and stored (store.hpp). A file that cannot be read or parsed, or that the
// database refuses, is named with the reason and skipped; the others are kept.
//
// Note [Ingesting many files]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A fleet's results are tens of thousands of files, and reading and parsing one costs about as much as
// storing it. ingest_files reads and parses on worker threads while the calling thread stores, in the order
// the files come (so messages and the store's contents do not depend on timing), many files a transaction
// (Note [Ingesting in batches] in summary.hpp). The files come from a PathSource one at a time: the arguments
// in order, a folder walked as the ingest goes, standard input read a line at a time; workers run at most a
// window of files ahead of the store. So what an ingest holds is a few parsed files and one batch's outcomes,
// whatever the number of files (a list of a million paths is never held). The store is touched by the calling
// thread only: a database connection is not shared.

#include <chrono>
#include <filesystem>
#include <functional>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/db/store.hpp"
#include "harness/results/read.hpp"

namespace memstress::db {

struct FileIngest {
  std::string path;
  std::optional<IngestOutcome> outcome;  // empty: skipped
  std::string format;                    // "memstress.run/1 document", ... (when read)
  std::string error;                     // why skipped
};

// A file read, hashed and parsed, not yet stored (results empty: file.error says why).
struct ParsedFile {
  FileIngest file;
  std::string sha256;
  std::optional<Results> results;
};
ParsedFile parse_file(const std::filesystem::path& path);

// Stores a parsed file in its own transaction (a skipped one is returned as it is).
FileIngest store_file(Store& store, ParsedFile parsed, const IngestOptions& options = {});

// Ingests `path` (parse_file, then store_file).
FileIngest ingest_file(Store& store, const std::filesystem::path& path, const IngestOptions& options = {});

// Where the files come from: each argument in order; a folder as every results file under it (recursively,
// in the order the file system lists them; names ending in .json, .jsonl, .json.xz, .json.gz, .jsonl.xz or
// .jsonl.gz; links to folders are not followed), `-` as the paths standard input lists, one a line. An input
// that gives no file (a folder without results files, an empty list) comes as a skipped input, named.
class PathSource {
 public:
  PathSource(std::vector<std::string> arguments, std::istream& list);
  ~PathSource();
  PathSource(const PathSource&) = delete;
  PathSource& operator=(const PathSource&) = delete;
  PathSource(PathSource&&) = delete;
  PathSource& operator=(PathSource&&) = delete;

  struct Item {
    std::filesystem::path path;
    std::string error;  // set: an input that gave no file, and why
  };
  // The next file, or nothing when every input is done. Not thread-safe.
  std::optional<Item> next();

 private:
  struct Walk;
  std::vector<std::string> arguments_;
  std::size_t at_ = 0;
  std::istream* list_;
  bool in_list_ = false;
  std::size_t from_input_ = 0;  // files the current folder or list gave
  std::unique_ptr<Walk> walk_;
};

struct IngestSettings {
  unsigned threads = 0;                        // parsing workers; 0: one per core
  std::size_t batch_files = 256;               // files a transaction at most
  std::chrono::milliseconds batch_time{2000};  // a batch is committed once it has been open this long
  IngestOptions store;
};

// Ingests every file the source gives, in order, parsing ahead of the store (Note [Ingesting many files]);
// `each` is called on this thread for each file, in order, once the batch it was in is committed. A database
// error ends it: the batches committed before stay, the one in flight is rolled back (DbError, saying so).
void ingest_files(Store& store, PathSource& source, const IngestSettings& settings,
                  const std::function<void(const FileIngest&)>& each);
// The same over a list of paths.
void ingest_files(Store& store, const std::vector<std::filesystem::path>& paths, unsigned threads,
                  const std::function<void(const FileIngest&)>& each);

// One line for people: "added results/a.json: memstress.run/1 document, 41 rows, 4 GPUs".
std::string describe(const FileIngest& file);

}  // namespace memstress::db
