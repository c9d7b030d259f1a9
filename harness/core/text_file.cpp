#include "harness/core/text_file.hpp"

#include <array>
#include <fstream>
#include <iterator>

namespace memstress {

std::optional<std::string> read_text_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return std::nullopt;
  }
  // In blocks, not a character at a time: the fleet store reads thousands of files.
  std::string text;
  std::error_code ec;
  if (const auto size = std::filesystem::file_size(path, ec); !ec) {
    text.reserve(size);
  }
  std::array<char, 1 << 16> block{};
  while (file.read(block.data(), block.size()) || file.gcount() > 0) {
    text.append(block.data(), static_cast<std::size_t>(file.gcount()));
  }
  if (file.bad()) {
    return std::nullopt;
  }
  return text;
}

}  // namespace memstress
