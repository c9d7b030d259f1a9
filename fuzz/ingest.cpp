// The fleet store's ingest behind `memstress db ingest` (harness/db/store.hpp): whatever the results
// loader accepts is stored in an SQLite database in memory. What the store promises of a parsed file: it
// goes in (no SQL error, no exception: every field the loader gives has a column), ingesting the same
// content again changes nothing (Note [Idempotent ingest]), and the outliers' query reads it back.

#include "fuzz/fuzz_target.hpp"
#include "harness/db/sha256.hpp"
#include "harness/db/store.hpp"
#include "harness/results/read.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace memstress;
  const std::string_view input = fuzz::text(data, size);
  return fuzz::run([&] {
    const Results results = parse_results(input);
    db::Store store(fuzz::must("opening a store in memory",
                               [] { return db::open_database(":memory:", db::OpenMode::create, "--db"); }));
    const std::string sha = db::sha256_hex(input);
    const db::IngestOutcome first =
        fuzz::must("ingesting a file the loader accepted", [&] { return store.ingest(results, sha, "a"); });
    fuzz::check(first.action == db::IngestAction::added,
                "a file ingested into an empty store is not 'added'");
    const db::Store::Counts before = store.counts();
    const db::IngestOutcome again =
        fuzz::must("ingesting the same content again", [&] { return store.ingest(results, sha, "b"); });
    fuzz::check(again.action == db::IngestAction::unchanged,
                "the same content ingested twice is not 'unchanged'");
    const db::Store::Counts after = store.counts();
    fuzz::check(before.runs == after.runs && before.rows == after.rows && before.metrics == after.metrics &&
                    before.samples == after.samples,
                "ingesting the same content again changed what the store holds");
    fuzz::must("reading the observations back", [&] { return store.observations({}); });
  });
}
