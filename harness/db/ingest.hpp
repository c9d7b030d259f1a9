#pragma once

// `memstress db ingest`: each file read, hashed, parsed by the results loader (harness/compare, the
// one parser of results files) and stored (store.hpp). A file that cannot be read or parsed, or that the
// database refuses, is named with the reason and skipped; the others are kept.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "harness/db/store.hpp"

namespace memstress::db {

struct FileIngest {
  std::string path;
  std::optional<IngestOutcome> outcome;  // empty: skipped
  std::string format;                    // "memstress.run/1 document", ... (when read)
  std::string error;                     // why skipped
};

// Ingests `path` (each file in its own transaction).
FileIngest ingest_file(Store& store, const std::filesystem::path& path);

// One line for people: "added results/a.json: memstress.run/1 document, 41 rows, 4 GPUs".
std::string describe(const FileIngest& file);

}  // namespace memstress::db
