#include "harness/core/text_table.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace memstress {

std::string render_table(const std::vector<TableLine>& lines) {
  std::vector<std::size_t> width;
  for (const TableLine& line : lines) {
    width.resize(std::max(width.size(), line.size()));
    for (std::size_t c = 0; c < line.size(); ++c) {
      width[c] = std::max(width[c], line[c].size());
    }
  }
  std::string out;
  for (const TableLine& line : lines) {
    std::string text;
    for (std::size_t c = 0; c < line.size(); ++c) {
      text += c + 1 == line.size() ? line[c] : fmt::format("{:<{}}  ", line[c], width[c]);
    }
    while (!text.empty() && text.back() == ' ') {
      text.pop_back();
    }
    out += text + '\n';
  }
  return out;
}

}  // namespace memstress
