#pragma once

// Where rows go as cases finish. With --out FILE.json, each row is appended to FILE.jsonl (header line
// first, then one line per row, flushed as it is written, then a footer), and FILE.json is written
// atomically at the end — also when the run is cut short by an error or a signal, with status "aborted".
// A crash therefore loses at most the case in flight: everything finished is in the .jsonl.
//
// Note [Rows on disk, digests in memory]
// A row carries every repetition's samples and ~150 allocator statistics: tens of kilobytes. Held until the
// end, a plan of thousands of cases took gigabytes. So each row is written out as it finishes (to the .jsonl,
// or without --out to an unnamed temporary file) and the sink keeps only its digest: the row without samples
// and allocator statistics, which is all the table, the CSV, the JUnit file, the rank summary and accept's
// judging read. The final document (--out, or --format json on stdout) is streamed: its rows are read back
// one at a time from the spool, each printed as run_json would print it, so memory stays flat whatever the
// number of cases.
//
// Note [One writer per output]
// Two runs given the same --out would interleave their streams and each replace the other's document. The
// sink takes an exclusive flock on FILE.jsonl before it empties it and holds it to the end; a second run is
// refused at once (exit 2) naming the file. The lock goes with the process, however it ends.
//
// The sink may be finished from another thread (a signal's, harness/core/interrupt.hpp): every member
// function takes its lock, and once finished it ignores further rows.

#include <filesystem>
#include <mutex>
#include <optional>
#include <string_view>

#include "harness/results/row.hpp"
#include "harness/results/row_spool.hpp"

namespace memstress {

class ResultSink {
 public:
  // Opens (and locks) the stream at once, so a bad or busy `out` fails (InputError, exit 2, naming
  // `out_what`, the command's flag that gave it) before any case runs. `digests`: keep each row's digest in
  // record() (the table, the CSV, JUnit, the rank summary and accept read them); a burn, whose rows are an
  // interval's each and which reads none of these, keeps none, so its memory stays flat however many
  // intervals it runs (the counts of each verdict are kept either way).
  ResultSink(RunRecord header, std::optional<std::filesystem::path> out, std::string out_what,
             bool digests = true);

  void append(Row row);
  // Sets the end time and status and writes the final document. Later calls (and appends) do nothing:
  // returns false for them.
  bool finish(RunStatus status, std::string abort_reason = {});

  // The run with each row's digest (no samples, no allocator statistics). Stable once finished.
  [[nodiscard]] const RunRecord& record() const noexcept { return run_; }
  // Rows appended so far (with or without their digests).
  [[nodiscard]] std::size_t rows() const;
  // Every row as it was appended, samples and allocator statistics included, read back from the spool.
  [[nodiscard]] std::vector<Row> full_rows() const;
  // The whole document with full rows, as run_json(...).dump(2) would print it, in pieces.
  void write_document(const std::function<void(std::string_view)>& emit) const;
  // FILE.json -> FILE.jsonl; anything else -> anything-else.jsonl.
  [[nodiscard]] static std::filesystem::path stream_path(const std::filesystem::path& out);

 private:
  void write_document_locked(const std::function<void(std::string_view)>& emit) const;

  mutable std::mutex mutex_;
  RunRecord run_;
  std::optional<std::filesystem::path> out_;
  std::string out_what_;
  RowSpool spool_;
  bool digests_ = true;
  VerdictCounts counts_;
  std::size_t appended_ = 0;
  bool finished_ = false;
};

}  // namespace memstress
