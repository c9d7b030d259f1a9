#pragma once

// Where a run's rows wait for the final document: the --out FILE.jsonl stream itself, or, without --out, an
// unnamed temporary file. See Note [Rows on disk, digests in memory] in sink.hpp.

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace memstress {

class RowSpool {
 public:
  // The results stream `jsonl` of --out `out`, locked for this process (Note [One writer per output]):
  // a second run writing it is refused with InputError naming `what` and the file. Emptied once locked.
  static RowSpool for_output(const std::filesystem::path& jsonl, const std::filesystem::path& out,
                             std::string_view what);
  // An unnamed temporary file under $TMPDIR (or /tmp); in memory if none can be made.
  static RowSpool anonymous();

  RowSpool(RowSpool&& other) noexcept;
  RowSpool& operator=(RowSpool&&) = delete;
  RowSpool(const RowSpool&) = delete;
  RowSpool& operator=(const RowSpool&) = delete;
  ~RowSpool();

  // Appends `line` and a newline, written through at once (a crash keeps every whole line).
  void append(std::string_view line);
  // Calls `each` with every line of type "row", parsed, in the order written.
  void for_each_row(const std::function<void(nlohmann::json&&)>& each) const;

 private:
  RowSpool(int fd, std::string name) noexcept : fd_(fd), name_(std::move(name)) {}

  int fd_ = -1;                     // -1: lines_ holds the rows
  std::string name_;                // for messages
  std::vector<std::string> lines_;  // the in-memory fallback
};

}  // namespace memstress
