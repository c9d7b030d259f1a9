#include "harness/core/text_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

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

std::string fit_text(const std::string& text, std::size_t width) {
  constexpr std::string_view kEllipsis = "...";
  if (text.size() <= width) {
    return text;
  }
  if (width <= kEllipsis.size()) {
    return std::string(kEllipsis.substr(0, width));
  }
  std::size_t cut = width - kEllipsis.size();
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0U) == 0x80U) {
    --cut;  // not inside a UTF-8 character
  }
  return text.substr(0, cut) + std::string(kEllipsis);
}

}  // namespace memstress
