// The fleet store's reading side (harness/db): what a query opens is a file anyone may have written. The
// input's first line is a schema version as a store might hold it (any text, in a schema_version table
// another program made with a text column: Note [Schema versions]); the rest is a whole file opened as
// --db by the queries (Note [Reading a store]). What the store promises: opening either store, for a query
// or an ingest, refuses it with a memstress::Error (exit 2) or opens it, and an opened store's
// observations read back without any other exception.

#include "harness/db/store.hpp"

#include <filesystem>
#include <string>
#include <string_view>

#include "fuzz/fuzz_target.hpp"
#include "fuzz/scratch.hpp"
#include "harness/db/schema.hpp"

namespace {

namespace fs = std::filesystem;
using namespace memstress;

void remove_store(const fs::path& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    std::error_code ignored;
    fs::remove(path.string() + suffix, ignored);
  }
}

// Opens `path` as each command would and reads what it holds.
void query(const fs::path& path) {
  for (const db::OpenMode mode : {db::OpenMode::read_only, db::OpenMode::create}) {
    fuzz::run([&] {
      db::Store store(db::open_database(path.string(), mode, "--db"));
      static_cast<void>(store.observations({}));
      static_cast<void>(store.counts());
    });
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // One directory for the process's life (libFuzzer calls us in one thread).
  static const fuzz::Scratch scratch("store");
  const std::string_view input = fuzz::text(data, size);
  const std::size_t newline = input.find('\n');
  const std::string_view version = input.substr(0, newline);
  const std::string_view file =
      newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);

  // The schema-version path: a store made here, its version row replaced by the input's first line.
  const fs::path versioned = scratch.file("versioned.sqlite");
  remove_store(versioned);
  fuzz::must("making a store", [&] {
    db::Store store(db::open_database(versioned.string(), db::OpenMode::create, "--db"));
    store.connection().exec(
        "DROP TABLE schema_version; CREATE TABLE schema_version (version TEXT, applied_at TEXT)");
    store.connection().prepare("INSERT INTO schema_version VALUES (?, 'fuzz')")->bind(1, version).run();
    return 0;
  });
  query(versioned);

  // The reader: the rest of the input as the store's file.
  const fs::path given = scratch.file("given.sqlite");
  remove_store(given);
  fuzz::write_file(given, file);
  query(given);
  return 0;
}
