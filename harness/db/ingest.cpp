// Reading, hashing and storing one results file (ingest.hpp).

#include "harness/db/ingest.hpp"

#include <fmt/format.h>

#include "harness/compare/results.hpp"
#include "harness/core/error.hpp"
#include "harness/core/text_file.hpp"
#include "harness/db/sha256.hpp"

namespace memstress::db {

FileIngest ingest_file(Store& store, const std::filesystem::path& path) {
  FileIngest file;
  file.path = path.string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    file.error = "no such file";
    return file;
  }
  if (std::filesystem::is_directory(path, ec)) {
    file.error = "a directory, not a results file";
    return file;
  }
  const std::optional<std::string> text = read_text_file(path);
  if (!text) {
    file.error = "cannot be read";
    return file;
  }
  compare::Results results;
  try {
    results = compare::parse_results(*text);
  } catch (const InputError& e) {
    file.error = e.what();
    return file;
  } catch (const nlohmann::json::exception& e) {
    file.error = fmt::format("not a valid results file: {}", e.what());
    return file;
  }
  file.format = results.format;
  // A database error (disk full, locked past the timeout) is the database's, not the file's: it ends the
  // ingest (DbError propagates), since every later file would fail the same way.
  file.outcome = store.ingest(results, sha256_hex(*text), file.path);
  return file;
}

std::string describe(const FileIngest& file) {
  if (!file.outcome) {
    return fmt::format("skipped '{}': {}", file.path, file.error);
  }
  const IngestOutcome& o = *file.outcome;
  switch (o.action) {
    case IngestAction::added:
      return fmt::format("added '{}': {}, {} rows, {} GPUs", file.path, file.format, o.rows, o.gpus);
    case IngestAction::replaced:
      return fmt::format("replaced '{}': {}, {} rows, {} GPUs (the same run as '{}', which had fewer rows)",
                         file.path, file.format, o.rows, o.gpus, o.held_from);
    case IngestAction::same_run:
      return fmt::format("same run '{}': already held from '{}' ({} rows); nothing changed", file.path,
                         o.held_from, o.rows);
    case IngestAction::unchanged:
      return fmt::format("unchanged '{}': the same content was ingested from '{}'; nothing changed",
                         file.path, o.held_from);
  }
  return {};
}

}  // namespace memstress::db
