#pragma once

// Reading a trace file's bytes, plain or gzip-compressed (zlib), for the trace readers.

#include <zlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace memstress {

struct GzCloser {
  void operator()(gzFile_s* file) const noexcept { gzclose_r(file); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// `path` opened for reading, plain or gzip. Throws InputError naming `what` and the path when the file is
// missing, not a regular file or unreadable.
[[nodiscard]] GzFile open_trace_file(const std::filesystem::path& path, std::string_view what);

// The whole content of `path`, decompressed when the file is gzip (told by its first bytes, not by its
// name, so a renamed file still reads). Throws InputError naming `what` and the path when the file is
// missing, not a regular file, unreadable, or a gzip stream that is corrupt or cut short.
std::string read_trace_file(const std::filesystem::path& path, std::string_view what);

// The same, but at most the first `max_bytes` bytes (decompressed): enough to tell what kind of file it is.
std::string read_trace_prefix(const std::filesystem::path& path, std::string_view what,
                              std::size_t max_bytes);

}  // namespace memstress
