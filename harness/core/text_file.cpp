#include "harness/core/text_file.hpp"

#include <fstream>
#include <iterator>

namespace memstress {

std::optional<std::string> read_text_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return std::nullopt;
  }
  std::string text(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>{});
  if (file.bad()) {
    return std::nullopt;
  }
  return text;
}

}  // namespace memstress
