#pragma once

// Where rows go as cases finish. With --out FILE.json, each row is appended to FILE.jsonl (header line
// first, then one line per row, flushed as it is written, then a footer), and FILE.json is written
// atomically at the end — also when the run is cut short by an error, with status "aborted". A crash
// therefore loses at most the case in flight: everything finished is in the .jsonl.

#include <filesystem>
#include <fstream>
#include <optional>

#include "harness/run/result.hpp"

namespace memstress {

class ResultSink {
 public:
  // Opens the stream at once, so a bad --out fails (InputError, exit 2) before any case runs.
  ResultSink(RunRecord header, std::optional<std::filesystem::path> out);

  void append(Row row);
  // Sets the end time and status and writes the final document. Call once.
  void finish(RunStatus status, std::string abort_reason = {});

  [[nodiscard]] const RunRecord& record() const noexcept { return run_; }
  // FILE.json -> FILE.jsonl; anything else -> anything-else.jsonl.
  [[nodiscard]] static std::filesystem::path stream_path(const std::filesystem::path& out);

 private:
  void write_line(const nlohmann::json& j);

  RunRecord run_;
  std::optional<std::filesystem::path> out_;
  std::ofstream stream_;
};

}  // namespace memstress
