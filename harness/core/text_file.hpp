#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace memstress {

// The whole of a text file, read to the end rather than by its size (/proc files report 0); empty
// optional when it cannot be opened or read.
std::optional<std::string> read_text_file(const std::filesystem::path& path);

}  // namespace memstress
