#include "harness/run/junit.hpp"

#include <fmt/format.h>

#include <map>
#include <vector>

#include "harness/core/json_text.hpp"

namespace memstress {
namespace {

std::string testcase(const Row& row, bool several_places, std::string_view skips_fail_by) {
  std::string name = fmt::format("{} [{}]", row.case_label(), row.allocator);
  if (several_places) {
    name += fmt::format(" rank {} {}", row.rank, row.device.label);
  }
  std::string body;
  const std::string reason = xml_text(row.reason);
  switch (row.verdict) {
    case Verdict::pass:
      break;
    case Verdict::fail:
      body = fmt::format("<failure message=\"{}\">{}</failure>", reason, reason);
      break;
    case Verdict::error:
      body = fmt::format("<error message=\"{}\">{}</error>", reason, reason);
      break;
    case Verdict::skip:
      body = skips_fail_by.empty()
                 ? fmt::format("<skipped message=\"{}\"/>", reason)
                 : fmt::format("<failure message=\"skipped, and {} fails a skip: {}\">{}</failure>",
                               xml_text(skips_fail_by), reason, reason);
      break;
  }
  return fmt::format("    <testcase classname=\"memstress.{}\" name=\"{}\" time=\"{:.3f}\">{}</testcase>\n",
                     xml_text(row.workload), xml_text(name), row.seconds, body);
}

}  // namespace

std::string xml_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : valid_utf8(std::string(text))) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 allows no control characters but tab, newline and carriage return.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          out += '?';
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string format_junit(const RunRecord& run, std::string_view skips_fail_by) {
  const bool skips_fail = !skips_fail_by.empty();
  std::map<std::string, std::vector<const Row*>> by_workload;  // sorted: stable output
  bool several_places = false;
  for (const Row& row : run.rows) {
    by_workload[row.workload].push_back(&row);
    several_places = several_places || row.rank != run.rows.front().rank ||
                     row.device.label != run.rows.front().device.label;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"memstress\">\n";
  for (const auto& [workload, rows] : by_workload) {
    int failures = 0;
    int errors = 0;
    int skipped = 0;
    double seconds = 0;
    std::string cases;
    for (const Row* row : rows) {
      const bool skip = row->verdict == Verdict::skip;
      failures += row->verdict == Verdict::fail || (skip && skips_fail) ? 1 : 0;
      errors += row->verdict == Verdict::error ? 1 : 0;
      skipped += skip && !skips_fail ? 1 : 0;
      seconds += row->seconds;
      cases += testcase(*row, several_places, skips_fail_by);
    }
    out += fmt::format(
        "  <testsuite name=\"memstress.{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" "
        "time=\"{:.3f}\" timestamp=\"{}\">\n{}  </testsuite>\n",
        xml_text(workload), rows.size(), failures, errors, skipped, seconds, xml_text(run.started_at), cases);
  }
  if (run.status == RunStatus::aborted) {
    const std::string reason = xml_text(run.abort_reason);
    out += fmt::format(
        "  <testsuite name=\"memstress.run\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\">\n"
        "    <testcase classname=\"memstress.run\" name=\"run completed\"><error message=\"run aborted: "
        "{}\">{}"
        "</error></testcase>\n  </testsuite>\n",
        reason, reason);
  }
  out += "</testsuites>\n";
  return out;
}

std::string format_junit_not_run(const std::string& suite, const std::string& name,
                                 const std::string& reason) {
  const std::string why = xml_text(reason);
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"memstress\">\n"
      "  <testsuite name=\"{}\" tests=\"1\" failures=\"1\" errors=\"0\" skipped=\"0\">\n"
      "    <testcase classname=\"{}\" name=\"{}\"><failure message=\"{}\">{}</failure></testcase>\n"
      "  </testsuite>\n</testsuites>\n",
      xml_text(suite), xml_text(suite), xml_text(name), why, why);
}

}  // namespace memstress
