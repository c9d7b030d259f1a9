#pragma once

// A trace's lines, one at a time, from its text in memory or straight from its file (plain or gzip).
//
// A trace file is read as it is decompressed, never whole: a 2 MB gzip of blank lines is 2 GB of text, and
// reading it whole (twice: the text, then a stream over it) took 4 GB to parse nothing. Here memory holds
// one chunk and one line; a line longer than kMaxLine is refused (no trace line is longer than a few
// hundred bytes), naming the file and the line.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "harness/trace/trace_file.hpp"

namespace memstress {

class TraceLines {
 public:
  static constexpr std::size_t kMaxLine = std::size_t{1} << 20;

  // Lines of `text` (kept by reference: it must outlive this). `name` is what messages call it.
  TraceLines(std::string_view text, std::string name);
  // Lines of the file at `path`, decompressed when it is gzip. Throws InputError naming `what` and the path
  // when it is missing, not a regular file, unreadable or corrupt.
  TraceLines(const std::filesystem::path& path, std::string_view what);

  // The next line without its newline (nor a '\r' before it), valid until the next call; false at the
  // end. `terminated` is false for a last line with no newline after it (a file cut short).
  bool next(std::string_view& line, bool& terminated);
  [[nodiscard]] const std::string& name() const noexcept { return name_; }

 private:
  // Reads more of the file into buffer_; false at its end.
  bool fill();

  std::string name_;
  std::string what_;
  GzFile file_;  // null: lines of text_
  std::string_view text_;
  std::string buffer_;  // file: bytes read but not yet returned, from start_
  std::size_t start_ = 0;
  std::uint64_t line_number_ = 0;
};

}  // namespace memstress
