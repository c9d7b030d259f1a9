#include "harness/run/table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "harness/core/text_table.hpp"
#include "harness/run/quantity.hpp"
#include "harness/run/rank_table.hpp"

namespace memstress {
namespace {

using Line = TableLine;

constexpr std::size_t kMinNote = 24;  // a note is never cut shorter than this

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

// Per workload, the parameters whose values differ between its rows.
std::map<std::string, std::set<std::string>, std::less<>> varying_params(const std::vector<Row>& rows) {
  std::map<std::string, std::map<std::string, std::set<std::string>>, std::less<>> seen;
  for (const Row& row : rows) {
    auto& params = seen[row.workload];  // a workload without parameters too
    for (const auto& [key, value] : row.params) {
      params[key].insert(value);
    }
  }
  std::map<std::string, std::set<std::string>, std::less<>> varying;
  for (const auto& [workload, params] : seen) {
    std::set<std::string>& keys = varying[workload];
    for (const auto& [key, values] : params) {
      if (values.size() > 1) {
        keys.insert(key);
      }
    }
  }
  return varying;
}

// The CASE cell: the parameters that vary between the workload's rows, or every parameter where none
// varies (a workload with one case is named by all of its parameters, not by an empty cell).
std::string label_of(const Row& row, const std::set<std::string>& keys) {
  std::string label;
  for (const auto& [key, value] : row.params) {
    if (keys.empty() || keys.contains(key)) {
      label += fmt::format("{}{}={}", label.empty() ? "" : " ", key, value);
    }
  }
  return label;
}

// The row's headline metric; a row that names none (read from an older file) heads with its first metric.
const MetricResult* headline_of(const Row& row) {
  if (const MetricResult* m = row.metric(row.headline)) {
    return m;
  }
  return row.metrics.empty() ? nullptr : &row.metrics.front();
}

// Whether `field` differs between the rows.
template <typename Field>
bool varies(const std::vector<Row>& rows, Field field) {
  return std::any_of(rows.begin(), rows.end(),
                     [&](const Row& row) { return field(row) != field(rows.front()); });
}

// The default table's optional columns: each only where it varies.
struct Columns {
  bool allocator = false;
  bool device = false;
  bool ranked = false;
};

Columns columns_of(const RunRecord& run) {
  Columns cols;
  cols.ranked = run.ranks > 1;
  cols.allocator = varies(run.rows, [](const Row& row) { return row.allocator; });
  cols.device = cols.ranked || varies(run.rows, [](const Row& row) { return row.device.label; });
  return cols;
}

// "every row: allocator caching, device sim:80G": what the default table has no column for.
std::string every_row(const RunRecord& run, const Columns& cols) {
  if (run.rows.empty() || (cols.allocator && cols.device)) {
    return {};
  }
  const Row& row = run.rows.front();
  if (cols.allocator) {
    return fmt::format("every row: device {}\n", row.device.label);
  }
  return cols.device ? fmt::format("every row: allocator {}\n", row.allocator)
                     : fmt::format("every row: allocator {}, device {}\n", row.allocator, row.device.label);
}

std::string spread(const Summary& s, double value, const DisplayScale& scale) {
  return s.n > 1 ? format_number(value / scale.divisor) : "-";
}

// A note too long for its column first loses its parenthesized details, the last first ("needs a real GPU
// (running on the simulated device sim:80G)" keeps "needs a real GPU"), and is cut only where that is not
// enough; --wide and the results keep it whole.
std::string shorten_note(std::string text, std::size_t room) {
  while (text.size() > room) {
    const std::size_t close = text.rfind(')');
    if (close == std::string::npos) {
      break;
    }
    std::size_t open = std::string::npos;
    int depth = 0;
    for (std::size_t i = close + 1; i-- > 0;) {
      if (text[i] == ')') {
        ++depth;
      } else if (text[i] == '(' && --depth == 0) {
        open = i;
        break;
      }
    }
    std::size_t from = open;
    while (from != std::string::npos && from > 0 && text[from - 1] == ' ') {
      --from;
    }
    if (from == std::string::npos || from == 0) {
      break;  // unbalanced, or the whole note is in parentheses
    }
    text.erase(from, close + 1 - from);
  }
  return fit_text(text, room);
}

// Cuts the last cell of every line but the header so that the lines fit in `width` columns.
void fit_last_column(std::vector<Line>& lines, std::size_t width) {
  std::vector<std::size_t> widths;
  for (const Line& line : lines) {
    widths.resize(std::max(widths.size(), line.size()));
    for (std::size_t c = 0; c + 1 < line.size(); ++c) {
      widths[c] = std::max(widths[c], line[c].size());
    }
  }
  std::size_t before = 0;  // where the last column starts
  for (std::size_t c = 0; c + 1 < widths.size(); ++c) {
    before += widths[c] + 2;
  }
  const std::size_t room = std::max(kMinNote, width > before ? width - before : 0);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    if (!lines[i].empty()) {
      lines[i].back() = shorten_note(lines[i].back(), room);
    }
  }
}

std::vector<Line> default_lines(const RunRecord& run, const Columns& cols, const TableOptions& options) {
  const auto varying = varying_params(run.rows);
  Line header{"WORKLOAD", "CASE"};
  if (cols.allocator) {
    header.emplace_back("ALLOCATOR");
  }
  if (cols.device) {
    header.emplace_back(cols.ranked ? "RANK:DEVICE" : "DEVICE");
  }
  header.insert(header.end(), {"VERDICT", "METRIC", "VALUE", "NOTE"});
  std::vector<Line> lines{header};
  for (const Row& row : run.rows) {
    Line line{row.workload, label_of(row, varying.at(row.workload))};
    if (cols.allocator) {
      line.push_back(row.allocator);
    }
    if (cols.device) {
      line.push_back(cols.ranked ? fmt::format("{}:{}", row.rank, row.device.label) : row.device.label);
    }
    line.emplace_back(to_string(row.verdict));
    if (const MetricResult* m = headline_of(row)) {
      line.insert(line.end(), {m->name, format_quantity(m->summary.median, m->unit)});
    } else {
      line.insert(line.end(), {"-", ""});
    }
    line.push_back(table_note(row));
    lines.push_back(std::move(line));
  }
  fit_last_column(lines, options.width);
  return lines;
}

std::vector<Line> wide_lines(const RunRecord& run) {
  const bool ranked = run.ranks > 1;
  std::vector<Line> lines{{"WORKLOAD", "CASE", "ALLOCATOR", ranked ? "RANK:DEVICE" : "DEVICE", "VERDICT",
                           "METRIC", "N", "MEDIAN", "P10", "P90", "CV", "UNIT", "NOTE"}};
  for (const Row& row : run.rows) {
    const Line head{row.workload, row.case_label(), row.allocator,
                    ranked ? fmt::format("{}:{}", row.rank, row.device.label) : row.device.label,
                    std::string(to_string(row.verdict))};
    const std::string note = table_note(row);
    if (row.metrics.empty()) {
      Line line = head;
      line.insert(line.end(), {"-", "", "", "", "", "", "", note});
      lines.push_back(std::move(line));
      continue;
    }
    bool first = true;
    for (const MetricResult& m : row.metrics) {
      const Summary& s = m.summary;
      const DisplayScale scale = display_scale(s.median, m.unit);
      Line line = first ? head : Line{"", "", "", "", ""};
      line.insert(line.end(), {m.name, std::to_string(s.n), format_number(s.median / scale.divisor),
                               spread(s, s.p10, scale), spread(s, s.p90, scale),
                               s.n > 1 && std::isfinite(s.cv) ? fmt::format("{:.1f}%", s.cv * 100.0) : "-",
                               scale.unit.empty() ? m.unit : scale.unit, first ? note : ""});
      lines.push_back(std::move(line));
      first = false;
    }
  }
  return lines;
}

}  // namespace

std::string table_note(const Row& row) {
  const std::string reason = first_line(row.reason);
  if (row.self_test.empty() || row.verdict == Verdict::skip) {
    return reason;
  }
  if (row.verdict == Verdict::pass) {
    return "self-test: " + row.self_test;
  }
  return fmt::format("self-test {}: {} (expected: {})", to_string(row.verdict), reason, row.self_test);
}

std::string format_table(const RunRecord& run, const TableOptions& options) {
  const bool ranked = run.ranks > 1;
  const VerdictCounts c = count_verdicts(run.rows);
  const std::string across = ranked ? format_rank_summary(summarize_ranks(run.rows, run.straggler_threshold),
                                                          run.straggler_threshold)
                                    : std::string();
  const Columns cols = columns_of(run);
  const std::string table = options.wide
                                ? render_table(wide_lines(run))
                                : every_row(run, cols) + render_table(default_lines(run, cols, options));
  return table + across +
         fmt::format("{} {}: {} passed, {} failed, {} skipped, {} errors{}\n", run.rows.size(),
                     ranked ? fmt::format("rows ({} ranks)", run.ranks) : std::string("cases"), c.pass,
                     c.fail, c.skip, c.error,
                     run.status == RunStatus::aborted ? " (run aborted: " + run.abort_reason + ")" : "");
}

}  // namespace memstress
