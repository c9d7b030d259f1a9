#include "harness/trace/trace_file.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <memory>
#include <system_error>

#include "harness/core/error.hpp"

namespace memstress {

std::string read_trace_file(const std::filesystem::path& path, std::string_view what) {
  return read_trace_prefix(path, what, std::string::npos);
}

GzFile open_trace_file(const std::filesystem::path& path, std::string_view what) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    throw InputError(fmt::format("{} '{}': no such file", what, path.string()));
  }
  if (!std::filesystem::is_regular_file(status)) {
    throw InputError(fmt::format("{} '{}': not a regular file", what, path.string()));
  }
  // gzopen reads a file that is not gzip as it is ("transparent" mode), so one path serves both.
  GzFile file(gzopen(path.c_str(), "rb"));
  if (!file) {
    throw InputError(fmt::format("{} '{}': cannot open it for reading", what, path.string()));
  }
  return file;
}

std::string read_trace_prefix(const std::filesystem::path& path, std::string_view what,
                              std::size_t max_bytes) {
  const GzFile file = open_trace_file(path, what);
  std::string content;
  std::array<char, 1 << 16> buffer{};
  while (content.size() < max_bytes) {
    const std::size_t want = std::min(buffer.size(), max_bytes - content.size());
    const int n = gzread(file.get(), buffer.data(), static_cast<unsigned>(want));
    if (n < 0) {
      int code = Z_OK;
      const char* message = gzerror(file.get(), &code);
      throw InputError(fmt::format("{} '{}': cannot decompress it ({}){}", what, path.string(), message,
                                   code == Z_BUF_ERROR ? ": the gzip file is truncated" : ""));
    }
    if (n == 0) {
      break;
    }
    content.append(buffer.data(), static_cast<std::size_t>(n));
  }
  int code = Z_OK;
  const char* message = gzerror(file.get(), &code);
  if (code != Z_OK) {
    throw InputError(fmt::format("{} '{}': cannot decompress it ({}){}", what, path.string(), message,
                                 code == Z_BUF_ERROR ? ": the gzip file is truncated" : ""));
  }
  return content;
}

}  // namespace memstress
