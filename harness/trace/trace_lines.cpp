#include "harness/trace/trace_lines.hpp"

#include <fmt/format.h>

#include <array>

#include "harness/core/error.hpp"

namespace memstress {
namespace {

constexpr std::size_t kChunk = std::size_t{1} << 16;

}  // namespace

TraceLines::TraceLines(std::string_view text, std::string name) : name_(std::move(name)), text_(text) {}

TraceLines::TraceLines(const std::filesystem::path& path, std::string_view what)
    : name_(path.string()), what_(what), file_(open_trace_file(path, what)) {}

bool TraceLines::fill() {
  if (start_ > 0) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  std::array<char, kChunk> chunk{};
  const int n = gzread(file_.get(), chunk.data(), static_cast<unsigned>(chunk.size()));
  int code = Z_OK;
  const char* message = gzerror(file_.get(), &code);
  if (n < 0 || code != Z_OK) {
    throw InputError(fmt::format("{} '{}': cannot decompress it ({}){}", what_, name_, message,
                                 code == Z_BUF_ERROR ? ": the gzip file is truncated" : ""));
  }
  buffer_.append(chunk.data(), static_cast<std::size_t>(n));
  return n > 0;
}

bool TraceLines::next(std::string_view& line, bool& terminated) {
  std::string_view rest;
  std::size_t end = std::string_view::npos;
  if (!file_) {
    if (text_.empty()) {
      return false;
    }
    end = text_.find('\n');
    rest = text_;
  } else {
    for (std::size_t scanned = 0;;) {
      end = buffer_.find('\n', start_ + scanned);
      if (end != std::string::npos) {
        end -= start_;
        break;
      }
      scanned = buffer_.size() - start_;
      if (scanned > kMaxLine) {
        break;
      }
      if (!fill()) {
        break;
      }
    }
    if (start_ == buffer_.size()) {
      return false;
    }
    rest = std::string_view(buffer_).substr(start_);
  }
  ++line_number_;
  if ((end == std::string_view::npos ? rest.size() : end) > kMaxLine) {
    throw InputError(fmt::format("{}:{}: a line longer than {} bytes: not a memstress trace", name_,
                                 line_number_, kMaxLine));
  }
  terminated = end != std::string_view::npos;
  line = terminated ? rest.substr(0, end) : rest;
  const std::size_t used = terminated ? end + 1 : rest.size();
  if (file_) {
    start_ += used;
  } else {
    text_.remove_prefix(used);
  }
  if (line.ends_with('\r')) {
    line.remove_suffix(1);
  }
  return true;
}

}  // namespace memstress
