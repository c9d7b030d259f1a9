#include "harness/compare/format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "harness/core/text_table.hpp"
#include "harness/run/format.hpp"

namespace memstress::compare {
namespace {

std::string number(double v) {
  return std::isfinite(v) ? format_value(v) : "-";
}

std::string change_text(const MetricComparison& m) {
  if (m.change_pct) {
    return fmt::format("{:+.1f}%", *m.change_pct);
  }
  return std::isfinite(m.base_median) && std::isfinite(m.new_median) ? "from 0" : "-";
}

std::string p_text(const MetricComparison& m) {
  return m.p_value ? fmt::format("{:.2g}", *m.p_value) : "-";
}

std::string verdict_text(const std::optional<Verdict>& v) {
  return v ? std::string(to_string(*v)) : "-";
}

// ALLOCATOR and DEVICE are columns only where rows differ in them; otherwise a line above the table
// says what they all share.
struct Columns {
  bool allocator = true;
  bool device = true;
  bool rank = false;  // in the DEVICE column, where some row has a rank but 0
};

Columns columns_of(const Comparison& c) {
  Columns cols;
  const auto all_same = [&](auto field) {
    return std::all_of(c.rows.begin(), c.rows.end(),
                       [&](const RowComparison& r) { return field(r.key) == field(c.rows.front().key); });
  };
  if (!c.rows.empty()) {
    cols.allocator = !all_same([](const ResultRow& r) { return r.allocator; });
    cols.device = !all_same([](const ResultRow& r) { return r.device; });
  }
  cols.rank = std::any_of(c.rows.begin(), c.rows.end(),
                          [](const RowComparison& r) { return r.key.rank && *r.key.rank != 0; });
  cols.device = cols.device || cols.rank;
  return cols;
}

std::string shared_text(const Comparison& c, const Columns& cols) {
  std::vector<std::string> parts;
  if (!cols.allocator && !c.rows.front().key.allocator.empty()) {
    parts.push_back("allocator " + c.rows.front().key.allocator);
  }
  if (!cols.device && !c.rows.front().key.device.empty()) {
    parts.push_back("device " + c.rows.front().key.device);
  }
  std::string out;
  for (const std::string& part : parts) {
    out += (out.empty() ? "every row: " : ", ") + terminal_text(part);
  }
  return out.empty() ? out : out + "\n";
}

// The cells that name a row: WORKLOAD, CASE and, where they vary, ALLOCATOR and DEVICE.
TableLine row_cells(const ResultRow& row, const Columns& cols) {
  TableLine line{row.workload, row.case_label};
  if (cols.allocator) {
    line.push_back(row.allocator);
  }
  if (cols.device) {
    line.push_back(cols.rank && row.rank ? fmt::format("{} rank {}", row.device, *row.rank) : row.device);
  }
  return line;
}

TableLine header_cells(const Columns& cols) {
  TableLine line{"WORKLOAD", "CASE"};
  if (cols.allocator) {
    line.emplace_back("ALLOCATOR");
  }
  if (cols.device) {
    line.emplace_back("DEVICE");
  }
  return line;
}

std::string side_line(const char* role, const Side& s) {
  return fmt::format("{:<4} {} ({}, {} rows)\n", role, terminal_text(s.path), terminal_text(s.format),
                     s.rows);
}

std::string environment_text(const Comparison& c) {
  if (c.environment.empty()) {
    return "environment: identical\n";
  }
  std::vector<TableLine> lines{{"", "WHAT", "BASE", "NEW"}};
  for (const EnvironmentDifference& d : c.environment) {
    lines.push_back({"", d.what, d.base, d.next});
  }
  return fmt::format("environment: {} difference{}\n", c.environment.size(),
                     c.environment.size() == 1 ? "" : "s") +
         render_table(lines);
}

std::vector<TableLine> matched_lines(const Comparison& c, const Columns& cols) {
  TableLine header = header_cells(cols);
  header.insert(header.end(), {"METRIC", "UNIT", "BASE", "NEW", "CHANGE", "P", "VERDICT", "NOTE"});
  std::vector<TableLine> lines{header};
  for (const RowComparison& r : c.rows) {
    if (r.presence != Presence::both) {
      continue;
    }
    std::vector<TableLine> body;
    if (r.base_verdict != Verdict::pass || r.new_verdict != Verdict::pass) {
      body.push_back({"verdict", "", verdict_text(r.base_verdict), verdict_text(r.new_verdict), "", "",
                      std::string(to_string(r.verdict_change)), r.note});
    }
    for (const MetricComparison& m : r.metrics) {
      body.push_back({m.name, m.unit, number(m.base_median), number(m.new_median), change_text(m), p_text(m),
                      std::string(to_string(m.outcome)), m.note});
    }
    if (body.empty()) {
      body.push_back({"-", "", "", "", "", "", "SAME", ""});
    }
    const TableLine head = row_cells(r.key, cols);
    for (std::size_t i = 0; i < body.size(); ++i) {
      TableLine line = i == 0 ? head : TableLine(head.size());
      line.insert(line.end(), body[i].begin(), body[i].end());
      lines.push_back(std::move(line));
    }
  }
  return lines;
}

std::string one_side_text(const Comparison& c, Presence presence, const Columns& cols) {
  TableLine header{""};
  const TableLine names = header_cells(cols);
  header.insert(header.end(), names.begin(), names.end());
  header.emplace_back("VERDICT");
  std::vector<TableLine> lines{header};
  for (const RowComparison& r : c.rows) {
    if (r.presence == presence) {
      TableLine line{""};
      const TableLine cells = row_cells(r.key, cols);
      line.insert(line.end(), cells.begin(), cells.end());
      line.push_back(verdict_text(presence == Presence::base_only ? r.base_verdict : r.new_verdict));
      lines.push_back(std::move(line));
    }
  }
  if (lines.size() == 1) {
    return "";
  }
  return fmt::format("only in {}: {} row{}\n", presence == Presence::base_only ? "BASE" : "NEW",
                     lines.size() - 1, lines.size() == 2 ? "" : "s") +
         render_table(lines);
}

nlohmann::json real_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

template <typename T>
nlohmann::json optional_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json verdict_json(const std::optional<Verdict>& v) {
  return v ? nlohmann::json(to_string(*v)) : nlohmann::json(nullptr);
}

nlohmann::json side_json(const Side& s) {
  return {{"path", s.path}, {"format", s.format}, {"rows", s.rows}, {"notes", s.notes}};
}

nlohmann::json metric_json(const MetricComparison& m) {
  return {{"name", m.name},
          {"unit", m.unit},
          {"better", to_string(m.better)},
          {"base", {{"n", m.base_n}, {"median", real_or_null(m.base_median)}}},
          {"new", {{"n", m.new_n}, {"median", real_or_null(m.new_median)}}},
          {"change_pct", optional_json(m.change_pct)},
          {"p_value", optional_json(m.p_value)},
          {"verdict", to_string(m.outcome)},
          {"note", m.note}};
}

std::string_view to_string(Presence p) {
  switch (p) {
    case Presence::both:
      return "both";
    case Presence::base_only:
      return "base_only";
    case Presence::new_only:
      return "new_only";
  }
  return "both";
}

nlohmann::json row_json(const RowComparison& r) {
  nlohmann::json metrics = nlohmann::json::array();
  for (const MetricComparison& m : r.metrics) {
    metrics.push_back(metric_json(m));
  }
  return {{"workload", r.key.workload},
          {"case", r.key.case_label},
          {"params", r.key.params},
          {"allocator", r.key.allocator},
          {"device", r.key.device},
          {"rank", optional_json(r.key.rank)},
          {"presence", to_string(r.presence)},
          {"base_verdict", verdict_json(r.base_verdict)},
          {"new_verdict", verdict_json(r.new_verdict)},
          {"verdict", to_string(r.verdict_change)},
          {"note", r.note},
          {"metrics", metrics}};
}

}  // namespace

std::string format_table(const Comparison& c) {
  const Columns cols = columns_of(c);
  std::string out = side_line("BASE", c.base) + side_line("NEW", c.next);
  for (const std::string& note : c.base.notes) {
    out += fmt::format("BASE: {}\n", terminal_text(note));
  }
  for (const std::string& note : c.next.notes) {
    out += fmt::format("NEW: {}\n", terminal_text(note));
  }
  out += environment_text(c);
  if (!c.rows.empty()) {
    out += shared_text(c, cols);
  }
  out += "\n";
  if (c.rows_matched > 0) {
    out += render_table(matched_lines(c, cols)) + "\n";
  }
  out += one_side_text(c, Presence::base_only, cols);
  out += one_side_text(c, Presence::new_only, cols);
  for (const std::string& note : c.notes) {
    out += fmt::format("note: {}\n", terminal_text(note));
  }
  const OutcomeCounts& m = c.metrics;
  out += fmt::format(
      "threshold {}%; two-sided Mann-Whitney U test at alpha {}, at least {} samples a side\n"
      "metrics: {} SAME, {} BETTER, {} WORSE, {} UNSURE, {} not judged\n"
      "rows: {} matched, {} regressed ({} from pass to fail or error), {} improved, {} only in BASE, {} only "
      "in "
      "NEW\n",
      c.options.threshold_pct, c.options.alpha, c.options.min_samples, m.same, m.better, m.worse, m.unsure,
      m.not_judged, c.rows_matched, c.rows_worse, c.rows_regressed, c.rows_improved, c.base_only, c.new_only);
  if (!c.nothing_compared.empty() && !c.regressed()) {
    return out + fmt::format("result: NOTHING COMPARED ({})\n", terminal_text(c.nothing_compared));
  }
  if (!c.regressed()) {
    return out + "result: no regression\n";
  }
  std::vector<std::string> why;
  if (m.worse > 0) {
    why.push_back(fmt::format("{} metric{} WORSE", m.worse, m.worse == 1 ? "" : "s"));
  }
  if (c.rows_regressed > 0) {
    why.push_back(fmt::format("{} row{} from pass to fail or error", c.rows_regressed,
                              c.rows_regressed == 1 ? "" : "s"));
  }
  out += "result: REGRESSION (" + why.front() + (why.size() > 1 ? ", " + why.back() : "") + ")\n";
  return out;
}

nlohmann::json comparison_json(const Comparison& c) {
  nlohmann::json differences = nlohmann::json::array();
  for (const EnvironmentDifference& d : c.environment) {
    differences.push_back({{"what", d.what}, {"base", d.base}, {"new", d.next}});
  }
  nlohmann::json rows = nlohmann::json::array();
  for (const RowComparison& r : c.rows) {
    rows.push_back(row_json(r));
  }
  const OutcomeCounts& m = c.metrics;
  return {{"schema", "memstress.compare/1"},
          {"base", side_json(c.base)},
          {"new", side_json(c.next)},
          {"threshold_pct", c.options.threshold_pct},
          {"alpha", c.options.alpha},
          {"min_samples", c.options.min_samples},
          {"test", "Mann-Whitney U, two-sided"},
          {"environment", {{"identical", c.environment.empty()}, {"differences", differences}}},
          {"rows", rows},
          {"notes", c.notes},
          {"summary",
           {{"metrics",
             {{"same", m.same},
              {"better", m.better},
              {"worse", m.worse},
              {"unsure", m.unsure},
              {"not_judged", m.not_judged}}},
            {"rows",
             {{"matched", c.rows_matched},
              {"regressed", c.rows_worse},
              {"from_pass_to_fail", c.rows_regressed},
              {"improved", c.rows_improved},
              {"base_only", c.base_only},
              {"new_only", c.new_only}}}}},
          {"regression", c.regressed()},
          {"nothing_compared",
           c.nothing_compared.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.nothing_compared)}};
}

}  // namespace memstress::compare
