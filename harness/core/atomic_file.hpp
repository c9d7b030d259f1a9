#pragma once

#include <filesystem>
#include <string_view>

namespace memstress {

// Writes `content` to `path` so that readers see the old file or the whole new one, never a part:
// a temporary file in the same directory, flushed to disk, then renamed over `path`.
// Throws InputError naming `what` (e.g. "--out") when the file cannot be written.
void write_file_atomically(const std::filesystem::path& path, std::string_view content,
                           std::string_view what);

}  // namespace memstress
