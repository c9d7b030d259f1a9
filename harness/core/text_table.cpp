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
      width[c] = std::max(width[c], terminal_text(line[c]).size());
    }
  }
  std::string out;
  for (const TableLine& line : lines) {
    std::string text;
    for (std::size_t c = 0; c < line.size(); ++c) {
      const std::string cell = terminal_text(line[c]);
      text += c + 1 == line.size() ? cell : fmt::format("{:<{}}  ", cell, width[c]);
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

namespace {

// The length of the UTF-8 character starting `text` (1 to 4), 0 where it is not one (a stray continuation
// byte, an overlong form, a surrogate, past U+10FFFF, cut short).
std::size_t utf8_length(std::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  std::size_t n = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead < 0x80) {
    return 1;
  }
  if (lead >= 0xC2 && lead <= 0xDF) {
    n = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    n = 3;
    low = lead == 0xE0 ? 0xA0 : 0x80;
    high = lead == 0xED ? 0x9F : 0xBF;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    n = 4;
    low = lead == 0xF0 ? 0x90 : 0x80;
    high = lead == 0xF4 ? 0x8F : 0xBF;
  } else {
    return 0;
  }
  if (text.size() < n || byte(1) < low || byte(1) > high) {
    return 0;
  }
  for (std::size_t i = 2; i < n; ++i) {
    if ((byte(i) & 0xC0U) != 0x80U) {
      return 0;
    }
  }
  return n;
}

}  // namespace

std::string terminal_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const auto c = static_cast<unsigned char>(text[0]);
    const std::size_t n = utf8_length(text);
    if (n == 0) {
      out += fmt::format("\\x{:02x}", c);
      text.remove_prefix(1);
      continue;
    }
    if (n == 2 && c == 0xC2 && static_cast<unsigned char>(text[1]) < 0xA0) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[1]));  // C1: U+0080 to U+009F
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out.append(text.substr(0, n));
    }
    text.remove_prefix(n);
  }
  return out;
}

std::string terminal_lines(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    out += terminal_text(text.substr(0, end));
    if (end == std::string_view::npos) {
      break;
    }
    out += '\n';
    text.remove_prefix(end + 1);
  }
  return out;
}

std::string printable(std::string_view text, std::size_t width) {
  return fit_text(terminal_text(text), width);
}

}  // namespace memstress
