// The run table (harness/run/table.hpp): the default table's headline metric in human units, varying
// parameters and width, --wide's spread (none for a single sample), and self-test rows labelled.

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "harness/core/text_table.hpp"
#include "harness/run/table.hpp"
#include "metric_fixture.hpp"

namespace memstress {
namespace {

using testing::metric_of;

Row leak_row(std::string retained, std::string self_test) {
  Row row;
  row.workload = "leak";
  row.params = {{"epochs", "20"}, {"per_epoch", "256M"}, {"retained", std::move(retained)}};
  row.allocator = "caching";
  row.device = DeviceRef{"sim:80G", "sim", 0, "simulated (80G)", "", ""};
  row.self_test = std::move(self_test);
  row.metrics = {metric_of("growth_per_epoch", "bytes/epoch", Better::none, {14008508, 14008508, 14035822}),
                 metric_of("growth_r2", "ratio", Better::none, {0.999, 0.999, 0.998}),
                 metric_of("leaked", "bytes", Better::none, {279e6, 279e6, 280e6})};
  return row;
}

std::size_t widest_line(const std::string& text) {
  std::istringstream lines(text);
  std::size_t widest = 0;
  for (std::string line; std::getline(lines, line);) {
    widest = std::max(widest, line.size());
  }
  return widest;
}

TEST(Table, DefaultShowsTheHeadlineMetricInHumanUnitsAndOnlyParametersThatVary) {
  RunRecord run;
  run.rows = {leak_row("0", ""), leak_row("0.05", "planted leak found")};
  for (Row& row : run.rows) {
    row.headline = "leaked";  // as the runner chose it from the workload's headline
  }
  const std::string table = format_table(run);
  EXPECT_NE(table.find("retained=0.05"), std::string::npos) << table;
  EXPECT_EQ(table.find("per_epoch="), std::string::npos) << table;  // the same in every case
  EXPECT_NE(table.find("leaked"), std::string::npos) << table;
  EXPECT_NE(table.find("266.1 MiB"), std::string::npos) << table;  // 279e6 bytes
  EXPECT_EQ(table.find("growth_r2"), std::string::npos) << table;
  EXPECT_EQ(table.find("P10"), std::string::npos) << table;
  EXPECT_EQ(table.find("DEVICE"), std::string::npos) << table;  // one device, one allocator: no columns
  EXPECT_EQ(table.find("ALLOCATOR"), std::string::npos) << table;
  EXPECT_EQ(table.rfind("every row: allocator caching, device sim:80G\n", 0), 0U) << table;
  EXPECT_NE(table.find("2 cases: 2 passed"), std::string::npos) << table;
  // A row that names no headline (from an older file): its first metric.
  for (Row& row : run.rows) {
    row.headline.clear();
  }
  EXPECT_NE(format_table(run).find("growth_per_epoch  13.36 MiB/epoch"), std::string::npos);
}

TEST(Table, SelfTestsSaySo) {
  RunRecord run;
  run.rows = {leak_row("0", ""), leak_row("0.05", "planted leak found")};
  std::string table = format_table(run);
  EXPECT_NE(table.find("self-test: planted leak found"), std::string::npos) << table;
  EXPECT_EQ(table_note(run.rows[0]), "");
  run.rows[1].verdict = Verdict::fail;
  run.rows[1].reason = "1 of 41 verified items were wrong";
  EXPECT_EQ(table_note(run.rows[1]),
            "self-test fail: 1 of 41 verified items were wrong (expected: planted leak found)");
}

TEST(Table, NotesAreCutToKeepTheDefaultTableWithinItsWidth) {
  RunRecord run;
  Row row = leak_row("0", "");
  row.verdict = Verdict::error;
  row.reason = std::string(300, 'x') + "\nsecond line";
  run.rows = {row, leak_row("0.05", "")};
  const std::string table = format_table(run);
  EXPECT_LE(widest_line(table), 160U) << table;
  EXPECT_NE(table.find("x..."), std::string::npos) << table;
  TableOptions wide;
  wide.wide = true;
  EXPECT_NE(format_table(run, wide).find(std::string(300, 'x')), std::string::npos);  // --wide: whole
  EXPECT_EQ(format_table(run, wide).find("second line"), std::string::npos);
}

TEST(Table, ASkipReasonTooLongForItsColumnLosesItsDetailsNotItsWords) {
  RunRecord run;
  Row row = leak_row("0", "");
  row.workload = "smoke";
  row.params = {{"bytes", std::string(94, '1')}};  // a CASE of 100 columns leaves the note its least, 24
  row.metrics.clear();                             // a skipped case has none
  row.verdict = Verdict::skip;
  row.reason = "needs a real GPU (running on the simulated device sim:80G)";
  Row other = row;
  other.params = {{"bytes", "2"}};
  run.rows = {row, other};
  const std::string table = format_table(run);
  EXPECT_LE(widest_line(table), 160U) << table;
  EXPECT_NE(table.find("needs a real GPU\n"), std::string::npos)
      << table;  // the words, not "...(running on the sim..."
  EXPECT_EQ(table.find("..."), std::string::npos) << table;
  TableOptions wide;
  wide.wide = true;
  EXPECT_NE(format_table(run, wide).find(row.reason), std::string::npos);  // --wide: whole
}

TEST(Table, AWorkloadOfOneCaseIsNamedByAllItsParameters) {
  RunRecord run;
  run.rows = {leak_row("0.05", "")};
  const std::string table = format_table(run);
  EXPECT_NE(table.find("epochs=20 per_epoch=256M retained=0.05"), std::string::npos) << table;
  // Beside a workload of several cases, each keeps its own rule.
  Row smoke = leak_row("0", "");
  smoke.workload = "smoke";
  smoke.params = {{"bytes", "1G"}};
  run.rows = {leak_row("0", ""), leak_row("0.05", ""), smoke};
  const std::string both = format_table(run);
  EXPECT_NE(both.find("retained=0.05"), std::string::npos) << both;
  EXPECT_EQ(both.find("per_epoch="), std::string::npos) << both;
  EXPECT_NE(both.find("bytes=1G"), std::string::npos) << both;
}

TEST(Table, FitTextNeverCutsInsideACharacter) {
  EXPECT_EQ(fit_text("short", 10), "short");
  EXPECT_EQ(fit_text("abcdefghij", 8), "abcde...");
  EXPECT_EQ(fit_text("abcd\xC2\xB2xyz", 8), "abcd...");  // "²" is two bytes: not split
}

TEST(Table, WideShowsEveryMetricParameterAndDeviceWithSpread) {
  RunRecord run;
  run.rows = {leak_row("0", ""), leak_row("0.05", "planted leak found")};
  TableOptions wide;
  wide.wide = true;
  const std::string table = format_table(run, wide);
  for (const char* text :
       {"P10", "P90", "CV", "DEVICE", "sim:80G", "per_epoch=256M", "growth_r2", "0.999", "MiB/epoch"}) {
    EXPECT_NE(table.find(text), std::string::npos) << text << "\n" << table;
  }
}

TEST(Table, ASingleSampleHasNoSpread) {
  RunRecord run;
  Row row = leak_row("0", "");
  row.metrics = {metric_of("largest_allocatable", "bytes", Better::none, {83846234112})};
  run.rows = {row};
  TableOptions wide;
  wide.wide = true;
  const std::string table = format_table(run, wide);
  // METRIC N MEDIAN P10 P90 CV UNIT
  EXPECT_NE(table.find("largest_allocatable  1  78.09   -    -    -   GiB"), std::string::npos) << table;
}

TEST(Table, AllocatorsAndDevicesGetAColumnOnlyWhereTheyVary) {
  RunRecord run;
  Row a = leak_row("0", "");
  Row b = a;
  b.rank = 1;
  b.device.label = "sim:40G";
  run.rows = {a, b};
  EXPECT_NE(format_table(run).find("DEVICE"), std::string::npos);
  EXPECT_EQ(format_table(run).rfind("every row: allocator caching\n", 0), 0U);
  run.ranks = 2;
  EXPECT_NE(format_table(run).find("1:sim:40G"), std::string::npos);
  b.allocator = "expandable";
  run.rows = {a, b};
  EXPECT_NE(format_table(run).find("ALLOCATOR"), std::string::npos);
  EXPECT_EQ(format_table(run).find("every row"), std::string::npos);
}

}  // namespace
}  // namespace memstress
