#pragma once

// `memstress db ingest`: each file read, hashed, parsed by the results loader (harness/compare, the
// one parser of results files) and stored (store.hpp). A file that cannot be read or parsed, or that the
// database refuses, is named with the reason and skipped; the others are kept.
//
// Note [Ingesting many files]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A fleet's results are thousands of files, and reading and parsing one costs about as much as storing
// it. ingest_files reads and parses on worker threads while the calling thread stores, one file at a
// time and in the order given (so messages and the store's contents do not depend on timing). Workers
// run at most a window of files ahead of the store, so memory holds a few parsed files, not all of them.
// The store is touched by the calling thread only: a database connection is not shared.

#include <filesystem>
#include <functional>
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
FileIngest store_file(Store& store, ParsedFile parsed);

// Ingests `path` (parse_file, then store_file).
FileIngest ingest_file(Store& store, const std::filesystem::path& path);

// Ingests every file in order, parsing on `threads` workers (0: one per core) ahead of the store (Note
// [Ingesting many files]); `each` is called on this thread after each file, in order. A database error
// ends it (DbError propagates, the files stored so far are kept).
void ingest_files(Store& store, const std::vector<std::filesystem::path>& paths, unsigned threads,
                  const std::function<void(const FileIngest&)>& each);

// One line for people: "added results/a.json: memstress.run/1 document, 41 rows, 4 GPUs".
std::string describe(const FileIngest& file);

}  // namespace memstress::db
