#pragma once

#include <string>
#include <vector>

namespace memstress {

// Lines of cells, rendered as left-aligned columns two spaces apart (each column as wide as its widest
// cell, trailing blanks trimmed): the tables `run` and `compare` print for people. Widths count
// bytes, so cells are ASCII.
using TableLine = std::vector<std::string>;
std::string render_table(const std::vector<TableLine>& lines);

// `text` cut to at most `width` bytes, ending in "..." when cut (never inside a UTF-8 character): a cell
// or a line that must fit.
std::string fit_text(const std::string& text, std::size_t width);

}  // namespace memstress
