// Reading a results file of either kind, telling them apart by content; every error names the file.

#include "harness/results/read.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "harness/core/error.hpp"
#include "harness/core/input_file.hpp"
#include "harness/core/json_field.hpp"
#include "harness/core/json_input.hpp"
#include "harness/core/json_text.hpp"
#include "harness/results/compressed.hpp"
#include "harness/results/lenient_json.hpp"

namespace memstress {
namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find('\n'), text.size());
    lines.push_back(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return lines;
}

bool blank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

// One line of a stream, or a discarded value where it is not JSON. The whole text's depth was checked
// before (parse_results), so the parse may not be deeper than that. A key twice throws InputError.
nlohmann::json parse_line(std::string_view line) {
  return parse_json_line(line);
}

// A line's "type" ("header", "row", "footer"), "" where it has none or is not an object.
std::string line_type(const nlohmann::json& line) {
  if (!line.is_object()) {
    return {};
  }
  const auto it = line.find("type");
  return it != line.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The first line of a memstress stream is a complete object with "type": "header"; a JSON document's
// first line is never that.
bool is_stream(const std::vector<std::string_view>& lines) {
  for (const std::string_view line : lines) {
    if (!blank(line)) {
      // A header names its type; a document's first line (often the whole document, written compactly) is
      // not parsed twice to find out that it does not.
      return line.find("\"type\"") != std::string_view::npos && line_type(parse_line(line)) == "header";
    }
  }
  return false;
}

void check_schema(const JsonField& header) {
  const nlohmann::json schema =
      header["schema"].json();  // a copy: g++ 13 cannot tell the reference outlives the field
  if (!schema.is_string() || schema.get<std::string>() != kSchemaId) {
    throw InputError(fmt::format("unknown schema {}: this memstress reads {}", json_text(schema), kSchemaId));
  }
}

Results read_stream(const std::vector<std::string_view>& lines) {
  nlohmann::json header;
  std::vector<ResultRow> rows;  // read as they come: never every row's JSON at once
  bool footer = false;
  bool truncated = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (blank(lines[i])) {
      continue;
    }
    nlohmann::json line;
    try {
      line = parse_line(lines[i]);
    } catch (const InputError& e) {
      throw InputError(fmt::format("line {}: {}", i + 1, e.what()));
    }
    if (line.is_discarded()) {
      // A run killed while writing a row leaves its last line cut short; anywhere else it is damage.
      if (i + 1 == lines.size() && !footer) {
        truncated = true;
        continue;
      }
      throw InputError(fmt::format("line {}: not JSON", i + 1));
    }
    const std::string type = line_type(line);
    if (type == "header" && header.is_null()) {
      check_schema(JsonField(line));
      header = std::move(line);
    } else if (type == "row" && !header.is_null()) {
      rows.push_back(read_memstress_row(line, rows.size()));
    } else if (type == "footer" && !header.is_null()) {
      try {
        const JsonField f(line);
        header["status"] = f["status"].string();
        header["abort_reason"] = f.string_or("abort_reason", std::string());
      } catch (const InputError& e) {
        throw InputError(fmt::format("line {} (the footer): {}", i + 1, e.what()));
      }
      footer = true;
    } else {
      throw InputError(fmt::format("line {}: expected a {} line, found {}", i + 1,
                                   header.is_null() ? "header" : "row or footer",
                                   type.empty() ? R"(no "type")" : R"("type": ")" + type + R"(")"));
    }
  }
  check_schema(JsonField(header));  // no header at all
  Results r = memstress_results(header, std::move(rows));
  r.format = fmt::format("{} stream", kSchemaId);
  if (truncated) {
    r.notes.emplace_back("its last line was cut short (the run was killed while writing it) and is left out");
  }
  return r;
}

// "line 12, column 20": where `offset` is in `text`, as editors count.
std::string line_and_column(std::string_view text, std::size_t offset) {
  const std::string_view before = text.substr(0, offset);
  const std::size_t line = 1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
  const std::size_t start = before.rfind('\n');
  return fmt::format("line {}, column {}", line,
                     offset - (start == std::string_view::npos ? 0 : start + 1) + 1);
}

// The word at `offset`: "NaN", "-Infinity".
std::string_view word_at(std::string_view text, std::size_t offset) {
  std::size_t end = offset + 1;
  while (end < text.size() && std::isalpha(static_cast<unsigned char>(text[end])) != 0) {
    ++end;
  }
  return text.substr(offset, end - offset);
}

Results read_document(std::string_view text) {
  // A memstress document's rows are read as the parse meets them and their JSON dropped (StreamedArray):
  // the document is never held whole as JSON, which costs several times its text. A row that does not
  // read is said once the document is known to be memstress results (a file of another kind may have
  // "rows" of its own).
  std::vector<ResultRow> rows;
  std::optional<InputError> bad_row;
  const StreamedArray streamed{"rows", [&](nlohmann::json&& row, std::size_t index) {
                                 if (bad_row) {
                                   return;
                                 }
                                 try {
                                   rows.push_back(read_memstress_row(row, index));
                                 } catch (const InputError& e) {
                                   bad_row = e;
                                 }
                               }};
  std::size_t first_word = std::string_view::npos;
  const nlohmann::json document = parse_json_allowing_nan(text, &first_word, &streamed);
  if (!document.is_object()) {
    throw InputError(fmt::format("not a results file (a JSON {}, not an object)", document.type_name()));
  }
  const JsonField fields(document);
  if (document.contains("schema")) {
    // memstress writes null for a value it has not (JSON has no NaN): a NaN or an infinity in its results
    // was put there by something else, and read as null it would be judged "no value" without a word.
    if (first_word != std::string_view::npos) {
      throw InputError(fmt::format(
          "{}: {}: memstress results hold no NaN or infinity (a value not measured is null); a damaged file",
          line_and_column(text, first_word), word_at(text, first_word)));
    }
    check_schema(fields);
    const JsonField rows_field = fields["rows"];
    if (!rows_field.json().is_array()) {
      rows_field.wrong_type("an array of rows");
    }
    if (bad_row) {
      throw InputError(*bad_row);
    }
    Results r = memstress_results(document, std::move(rows));
    r.format = fmt::format("{} document", kSchemaId);
    return r;
  }
  if (document.contains("benchmarks") && document.at("benchmarks").is_array()) {
    return google_benchmark_results(document);
  }
  throw InputError(
      "not a results file: neither memstress results (no \"schema\") nor Google Benchmark JSON (no "
      "\"benchmarks\" array)");
}

}  // namespace

std::string read_results_file(const std::filesystem::path& path) {
  // Compressed (.xz, .gz: told by their first bytes) or not, the text is held to one bound.
  return decompressed(read_input_file(path, kMaxResultsFileBytes, "a results file"), kMaxResultsFileBytes);
}

std::string_view to_string(ResultsKind kind) noexcept {
  return kind == ResultsKind::memstress ? "memstress results" : "Google Benchmark JSON";
}

Results parse_results(std::string_view text) {
  check_json_depth(text);  // the whole text, streams included: nothing below parses deeper
  const std::vector<std::string_view> lines = split_lines(text);
  return is_stream(lines) ? read_stream(lines) : read_document(text);
}

Results load_results(const std::filesystem::path& path, std::string_view role) {
  try {
    const std::string text = read_results_file(path);
    Results r = parse_results(text);
    r.path = path;
    return r;
  } catch (const InputError& e) {
    throw InputError(fmt::format("{} '{}': {}", role, path.string(), e.what()));
  } catch (const nlohmann::json::exception& e) {
    // Every field is read through JsonField, which throws InputError; this is the net under it.
    throw InputError(fmt::format("{} '{}': not a valid results file: {}", role, path.string(), e.what()));
  }
}

}  // namespace memstress
