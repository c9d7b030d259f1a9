// Reading a results file of either kind, telling them apart by content; every error names the file.

#include <fmt/format.h>

#include <sstream>

#include "harness/compare/lenient_json.hpp"
#include "harness/compare/results.hpp"
#include "harness/core/error.hpp"
#include "harness/core/text_file.hpp"

namespace memstress::compare {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw InputError("no such file");
  }
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError("a directory, not a results file");
  }
  std::optional<std::string> text = read_text_file(path);
  if (!text) {
    throw InputError("cannot be read");
  }
  return std::move(*text);
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

// The first line of a memstress stream is a complete object with "type": "header"; a JSON document's
// first line is never that.
bool is_stream(const std::vector<std::string>& lines) {
  for (const std::string& line : lines) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) {
      continue;
    }
    const nlohmann::json first = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    return first.is_object() && first.value("type", std::string()) == "header";
  }
  return false;
}

void check_schema(const nlohmann::json& header) {
  const nlohmann::json& schema = header.at("schema");
  if (!schema.is_string() || schema.get<std::string>() != kSchemaId) {
    throw InputError(fmt::format("unknown schema {}: this memstress reads {}", schema.dump(), kSchemaId));
  }
}

Results read_stream(const std::vector<std::string>& lines) {
  nlohmann::json header;
  std::vector<nlohmann::json> rows;
  bool footer = false;
  bool truncated = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find_first_not_of(" \t\r") == std::string::npos) {
      continue;
    }
    nlohmann::json line = nlohmann::json::parse(lines[i], nullptr, /*allow_exceptions=*/false);
    if (line.is_discarded()) {
      // A run killed while writing a row leaves its last line cut short; anywhere else it is damage.
      if (i + 1 == lines.size() && !footer) {
        truncated = true;
        continue;
      }
      throw InputError(fmt::format("line {}: not JSON", i + 1));
    }
    const std::string type = line.is_object() ? line.value("type", std::string()) : std::string();
    if (type == "header" && header.is_null()) {
      header = std::move(line);
    } else if (type == "row" && !header.is_null()) {
      rows.push_back(std::move(line));
    } else if (type == "footer" && !header.is_null()) {
      header["status"] = line.at("status");
      header["abort_reason"] = line.value("abort_reason", std::string());
      footer = true;
    } else {
      throw InputError(fmt::format("line {}: expected a {} line, found {}", i + 1,
                                   header.is_null() ? "header" : "row or footer",
                                   type.empty() ? "no \"type\"" : "\"type\": \"" + type + "\""));
    }
  }
  check_schema(header);
  Results r = memstress_results(header, rows);
  r.format = fmt::format("{} stream", kSchemaId);
  if (truncated) {
    r.notes.emplace_back("its last line was cut short (the run was killed while writing it) and is left out");
  }
  return r;
}

Results read_document(const std::string& text) {
  nlohmann::json document;
  try {
    document = parse_json_allowing_nan(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(fmt::format("not JSON ({})", e.what()));
  }
  if (!document.is_object()) {
    throw InputError(fmt::format("not a results file (a JSON {}, not an object)", document.type_name()));
  }
  if (document.contains("schema")) {
    check_schema(document);
    Results r = memstress_results(document, document.at("rows").get<std::vector<nlohmann::json>>());
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

std::string_view to_string(ResultsKind kind) noexcept {
  return kind == ResultsKind::memstress ? "memstress results" : "Google Benchmark JSON";
}

Results load_results(const std::filesystem::path& path, std::string_view role) {
  try {
    const std::string text = read_file(path);
    const std::vector<std::string> lines = split_lines(text);
    Results r = is_stream(lines) ? read_stream(lines) : read_document(text);
    r.path = path;
    return r;
  } catch (const InputError& e) {
    throw InputError(fmt::format("{} '{}': {}", role, path.string(), e.what()));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{} '{}': not a valid results file: {}", role, path.string(), e.what()));
  }
}

}  // namespace memstress::compare
