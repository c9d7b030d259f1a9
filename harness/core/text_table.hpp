#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace memstress {

// Lines of cells, rendered as left-aligned columns two spaces apart (each column as wide as its widest
// cell, trailing blanks trimmed): the tables `run` and `compare` print for people. Widths count
// bytes, so cells are ASCII. Each cell is shown through terminal_text: a cell cannot move the cursor,
// start a line or recolour the terminal, whatever file it came from.
using TableLine = std::vector<std::string>;
std::string render_table(const std::vector<TableLine>& lines);

// `text` cut to at most `width` bytes, ending in "..." when cut (never inside a UTF-8 character): a cell
// or a line that must fit.
std::string fit_text(const std::string& text, std::size_t width);

// Text read from a file (a GPU name, a host, a reason) as it may reach a terminal: control characters
// (C0, DEL, C1) and bytes that are not UTF-8 written as escapes (\n, \r, \t, \x1b, \u009b, \xff), everything
// else as it is. Only for what people read: JSON, OpenMetrics and HTML keep the exact text, escaped by their
// rules.
std::string terminal_text(std::string_view text);

// A whole text of many lines as it may reach a terminal: terminal_text of each line, the line breaks kept.
// For reports that quote file names and frames (the doctor's): none of their bytes can move the cursor, clear
// the screen, set a window title or end the output early (a NUL).
std::string terminal_lines(std::string_view text);

// terminal_text cut to at most `width` bytes (fit_text): a value quoted in a one-line message.
std::string printable(std::string_view text, std::size_t width);

}  // namespace memstress
