#include "harness/accept/junit.hpp"

#include <fmt/format.h>

#include "harness/run/junit.hpp"

namespace memstress {

std::string format_accept_junit(const Profile& profile,
                                const std::vector<std::pair<const AcceptCheck*, CheckOutcome>>& results,
                                const std::vector<RunCheckFailure>& run_failures) {
  int failures = static_cast<int>(run_failures.size());
  int skipped = 0;
  std::string cases;
  for (const auto& [check, outcome] : results) {
    failures += outcome.pass || outcome.skipped ? 0 : 1;
    skipped += outcome.skipped ? 1 : 0;
    // The same line as the text output, plus its parts as properties, for CI systems that show them.
    std::string properties;
    const auto property = [&](const char* name, const std::string& value) {
      if (!value.empty()) {
        properties += fmt::format("        <property name=\"{}\" value=\"{}\"/>\n", name, xml_text(value));
      }
    };
    property("workload", check->workload);
    property("metric", check->metric);
    property("measured", outcome.measured ? fmt::format("{}", *outcome.measured) : std::string());
    property("unit", outcome.unit);
    property("bound", outcome.bound);
    property("gpu", outcome.where);
    property("failure", std::string(to_string(outcome.failure)));
    const std::string detail = xml_text(outcome.detail);
    const std::string body = outcome.skipped ? fmt::format("<skipped message=\"{}\"/>", detail)
                             : outcome.pass  ? fmt::format("<system-out>{}</system-out>", detail)
                                             : fmt::format("<failure message=\"{}\"/>", detail);
    cases += fmt::format(
        "    <testcase classname=\"memstress.accept.{}\" name=\"{}\">\n      <properties>\n{}      "
        "</properties>\n      {}\n    </testcase>\n",
        xml_text(profile.name), xml_text(check->name), properties, body);
  }
  for (const RunCheckFailure& failure : run_failures) {
    cases += fmt::format(
        "    <testcase classname=\"memstress.accept.{}\" name=\"{}\">\n      <failure message=\"{}\"/>\n    "
        "</testcase>\n",
        xml_text(profile.name), xml_text(failure.name), xml_text(failure.detail));
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"memstress\">\n  <testsuite "
      "name=\"memstress.accept.{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n{}  "
      "</testsuite>\n"
      "</testsuites>\n",
      xml_text(profile.name), results.size() + run_failures.size(), failures, skipped, cases);
}

}  // namespace memstress
